import { Args, Command, Options } from "@effect/cli"
import type { SyncedRelease } from "../services/fleet/control/releases/CatalogMaintenance.js"
import { FleetConfigLive, FleetServicesLive, RolloutLive, TagLive, VaultOnlyLive } from "./Layers.js"
import { lazyRun } from "./Lazy.js"
import { integerOption, json } from "./Output.js"

const impl = lazyRun(() => import("./run/release.js"))

export const line = (release: SyncedRelease) =>
  `${release.outcome.padEnd(8)} ${release.product} ${release.version}${release.problems.map((p) => `\n         ${p.code}: ${p.detail}`).join("")}`

export const syncConfig = {
  root: Options.directory("root", { exists: "yes" }).pipe(
    Options.withDescription("A release tree: <product>/<version>/ directories (or a releases/ directory of them)")
  ),
  json
}

const sync = Command.make("sync", syncConfig, (args) => impl((m) => m.sync(args))).pipe(
  Command.withDescription(
    "Import existing release trees into the catalog: each verified (signature, manifest, digests) before it is published"
  )
)

const audit = Command.make("audit", { json }, (args) => impl((m) => m.audit(args))).pipe(
  Command.withDescription(
    "Re-verify every catalog entry in the object store: objects, digests, signatures, reservations"
  )
)

export const keyCreateConfig = {
  item: Options.text("item").pipe(
    Options.withDescription("The vault item to create (settings.release.signing_key_item)")
  ),
  json
}

const keyCreate = Command.make("create", keyCreateConfig, (args) => impl((m) => m.keyCreate(args))).pipe(
  Command.withDescription("Create an Ed25519 release signing key in the vault; prints its key id and public key")
)

export const keyShowConfig = {
  item: Options.text("item").pipe(Options.withDescription("The vault item holding the key")),
  json
}

const keyShow = Command.make("show", keyShowConfig, (args) => impl((m) => m.keyShow(args))).pipe(
  Command.withDescription("The key id and public key of a release signing key in the vault")
)

export const submitConfig = {
  source: Options.directory("source", { exists: "yes" }).pipe(
    Options.withDescription(
      "The top of a clean git work tree holding keel-release.json (its committed tree is released)"
    )
  ),
  version: Options.text("exact-version").pipe(
    Options.withDescription("The exact version (written --version on this command's line too)")
  ),
  channel: Options.text("channel").pipe(Options.withDescription("The channel, e.g. stable or candidate")),
  waitSeconds: integerOption("wait-seconds", 0, 86_400).pipe(
    Options.withDefault(3600),
    Options.withDescription("How long to wait for the build before answering the run as it stands (exit 3)")
  ),
  stepPauseMs: integerOption("step-pause-ms", 0, 60_000).pipe(
    Options.withDefault(0),
    Options.withDescription("Pause after each publication object, 0-60000 ms (to watch a run step by step)")
  ),
  detach: Options.boolean("detach").pipe(
    Options.withDescription(
      "Hand the run to the control plane's ReleaseRun workflow and return (KEEL_GRANT_FILE: release-submit)"
    )
  ),
  json
}

const submit = Command.make("submit", submitConfig, (args) => impl((m) => m.submit(args))).pipe(
  Command.withDescription(
    "Submit a release: archive the committed source, reserve the version, build on a builder, sign and publish (docs/releases.md)"
  )
)

export const buildConfig = {
  run: Options.text("run").pipe(Options.withDescription("The release run to build (its id)")),
  json
}

const build = Command.make("build", buildConfig, (args) => impl((m) => m.build(args))).pipe(
  Command.withDescription(
    "Build a release run on this builder (queued by release submit): writes the outputs through the object API"
  )
)

export const promoteConfig = {
  product: Args.text({ name: "PRODUCT" }),
  version: Args.text({ name: "VERSION" }),
  channel: Options.text("channel").pipe(
    Options.optional,
    Options.withDescription("The channel to record (default: the release's own)")
  ),
  expectGeneration: integerOption("expect-generation", 0).pipe(
    Options.optional,
    Options.withDescription("Refuse unless release_control is still at this generation (compare-and-set)")
  ),
  json
}

const promote = Command.make("promote", promoteConfig, (args) => impl((m) => m.promote(args))).pipe(
  Command.withDescription(
    "Promote a catalogued release: release_control.versions[PRODUCT] = VERSION, generation + 1 (compare-and-set)"
  )
)

export const rolloutConfig = {
  product: Options.text("product").pipe(
    Options.optional,
    Options.withDescription("Only this product (default: every product release_control promotes)")
  ),
  stepPauseMs: integerOption("step-pause-ms", 0, 60_000).pipe(
    Options.withDefault(0),
    Options.withDescription("Pause after each declaration and delivery, 0-60000 ms (to watch a rollout)")
  ),
  json
}

const rollout = Command.make("rollout", rolloutConfig, (args) => impl((m) => m.rollout(args))).pipe(
  Command.withDescription(
    "The release agent: converge every declared target to the promoted versions; deployment.json once all report them"
  )
)

export const pruneConfig = {
  apply: Options.boolean("apply").pipe(Options.withDescription("Delete (without it: report what would go)")),
  json
}

const prune = Command.make("prune", pruneConfig, (args) => impl((m) => m.prune(args))).pipe(
  Command.withDescription(
    "Reclaim the control plane's build copies: lost attempts of finished runs, and copies published under releases/"
  )
)

export const tagConfig = {
  tag: Args.text({ name: "TAG" }).pipe(
    Args.withDescription("v<major>.<minor>.<patch> (stable) or with -<suffix> (candidate)")
  ),
  source: Options.directory("source", { exists: "yes" }).pipe(
    Options.withDescription("The clean work tree with the tag checked out")
  ),
  waitSeconds: integerOption("wait-seconds", 0, 86_400).pipe(
    Options.withDefault(3600),
    Options.withDescription("How long each publication waits for its build (exit 3 when one has not finished)")
  ),
  json
}

const tag = Command.make("tag", tagConfig, (args) => impl((m) => m.tag(args))).pipe(
  Command.withDescription(
    "The repository tag adapter: version check, reservations, native publication and delivery, then Linux (docs/releases.md)"
  )
)

export const release = Command.make("release").pipe(
  Command.withDescription("Releases: submit and build, the signing key and the catalog (docs/releases.md)"),
  Command.withSubcommands([
    submit.pipe(Command.provide(FleetServicesLive)),
    build.pipe(Command.provide(FleetConfigLive)),
    prune.pipe(Command.provide(FleetServicesLive)),
    promote.pipe(Command.provide(RolloutLive)),
    tag.pipe(Command.provide(TagLive)),
    rollout.pipe(Command.provide(RolloutLive)),
    Command.make("catalog").pipe(
      Command.withDescription("The release catalog"),
      Command.withSubcommands([sync, audit]),
      Command.provide(FleetServicesLive)
    ),
    Command.make("key").pipe(
      Command.withDescription("The release signing key, held in the vault"),
      // Showing a key reads one vault item: the vault alone, no other service constructed.
      Command.withSubcommands([
        keyCreate.pipe(Command.provide(FleetServicesLive)),
        keyShow.pipe(Command.provide(VaultOnlyLive))
      ])
    )
  ])
)
