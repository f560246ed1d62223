import { Args, Command, Options } from "@effect/cli"
import { FleetServicesLive } from "./Layers.js"
import { lazyRun } from "./Lazy.js"
import { json } from "./Output.js"

const impl = lazyRun(() => import("./run/registry.js"))

const cached = Options.boolean("cached").pipe(
  Options.withDescription("When the source cannot be read, answer the last valid snapshot (marked cached)")
)
const bundledRegistry = Options.boolean("bundled-registry").pipe(
  Options.withDescription("Read the registry shipped inside the package instead of KEEL_REGISTRY")
)

export const showConfig = { cached, bundledRegistry, json }

const show = Command.make("show", showConfig, (args) => impl((m) => m.show(args))).pipe(
  Command.withDescription("Read and validate the canonical registry (KEEL_REGISTRY) and summarise it")
)

export const validateConfig = { file: Args.file({ name: "FILE", exists: "yes" }).pipe(Args.optional), json }

const validate = Command.make("validate", validateConfig, (args) => impl((m) => m.validate(args))).pipe(
  Command.withDescription("Validate a registry file (or the configured source); lists every problem by path")
)

const expect = Options.text("expect").pipe(
  Options.withDescription("The digest the change was made against (from `registry show`): compare-and-set")
)
const reason = Options.text("reason").pipe(
  Options.withDefault("changed with ctl"),
  Options.withDescription("Why: recorded in the audit object (and the git commit message)")
)

export const setConfig = { file: Args.file({ name: "FILE", exists: "yes" }), expect, reason, json }

const set = Command.make("set", setConfig, (args) => impl((m) => m.set(args))).pipe(
  Command.withDescription("Replace the registry with FILE, if it is still at --expect DIGEST (validated first)")
)

export const applyConfig = { file: Args.file({ name: "FILE", exists: "yes" }), expect, reason, json }

const apply = Command.make("apply", applyConfig, (args) => impl((m) => m.apply(args))).pipe(
  Command.withDescription(
    "Apply FILE as a JSON merge patch (RFC 7386, YAML or JSON) to the registry, if it is still at --expect DIGEST"
  )
)

export const registry = Command.make("registry").pipe(
  Command.withDescription("The canonical fleet registry"),
  Command.withSubcommands([show, validate, set, apply]),
  Command.provide(FleetServicesLive)
)
