import { Args, Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import { Effect } from "effect"
import { ReconcilerOpsLive } from "./Layers.js"
import { lazyRun } from "./Lazy.js"
import { json } from "./Output.js"

const impl = lazyRun(() => import("./run/service.js"))

const name = Args.text({ name: "NAME" }).pipe(Args.withDescription("The service's name in the registry"))
const targetOption = Options.text("target").pipe(
  Options.optional,
  Options.withDescription("The target declaring the service (needed when several declare one of that name)")
)
const here = Options.boolean("here").pipe(
  Options.withDescription(
    "Act on this host's service manager (how the control plane reaches a host through its channel)"
  )
)

const list = Command.make("list", { json }, (args) => impl((m) => m.list(args))).pipe(
  Command.withDescription("Declared services and their state in the latest reconciliation run")
)

const url = Options.text("url").pipe(
  Options.mapEffect((text) => {
    const parsed = URL.canParse(text) ? new URL(text) : undefined
    return parsed !== undefined && (parsed.protocol === "http:" || parsed.protocol === "https:")
      ? Effect.succeed(text)
      : Effect.fail(
          ValidationError.invalidValue(HelpDoc.p("--url: expected an http(s) URL such as http://127.0.0.1:8080/health"))
        )
  }),
  Options.optional,
  Options.withDescription("With --here: the endpoint to probe from this host")
)

export const verifyConfig = { json, here, url }

const verify = Command.make("verify", verifyConfig, (args) => impl((m) => m.verify(args))).pipe(
  Command.withDescription("Probe every declared endpoint from its consumer hosts now (exit 1 unless all are observed)")
)

export const showConfig = { name, target: targetOption, here, json }

const show = Command.make("show", showConfig, (args) => impl((m) => m.show(args))).pipe(
  Command.withDescription("A service's declaration, its unit as the host reports it now, and its last decision")
)

const repair = (verb: "ensure" | "kick" | "reassert", description: string) =>
  Command.make(verb, { name, target: targetOption, here, json }, (args) => impl((m) => m.repair(verb, args))).pipe(
    Command.withDescription(description)
  )

const apply = Options.boolean("apply").pipe(Options.withDescription("Execute the decision (without it, only show it)"))
const targetArg = Args.text({ name: "TARGET" }).pipe(Args.withDescription("The registry target"))

export const convergeConfig = { target: targetArg, name, apply, json }

const converge = Command.make("converge", convergeConfig, (args) => impl((m) => m.converge(args))).pipe(
  Command.withDescription("Decide one service from fresh evidence; --apply executes the decision (under its lease)")
)

export const service = Command.make("service").pipe(
  Command.withDescription("Declared services: their state, endpoint checks, and repairs on their hosts"),
  Command.withSubcommands([
    list,
    verify,
    show,
    repair(
      "ensure",
      "Install or repair the service's unit on its host: create, restart in place, or reload after a preflight"
    ),
    repair("kick", "Restart the service's process onto the binary on disk"),
    repair("reassert", "Enable and start a oneshot's timer (the beacon's repair)"),
    converge
  ]),
  Command.provide(ReconcilerOpsLive)
)
