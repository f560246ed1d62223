import { Args, Command, Options } from "@effect/cli"
import { HostOpsLive, HostOpsPreviewLive, JanitorLive, JanitorPreviewLive } from "./Layers.js"
import { lazyRun } from "./Lazy.js"
import { integerOption, json } from "./Output.js"

const impl = lazyRun(() => import("./run/janitor.js"))

export const diskCleanupConfig = {
  once: Options.boolean("once").pipe(Options.withDescription("Run one pass (the default)")),
  dryRun: Options.boolean("dry-run").pipe(Options.withDescription("Scan and report; write no state, delete nothing")),
  watch: Options.boolean("watch").pipe(Options.withDescription("Run a pass every --interval seconds (the timer unit)")),
  interval: integerOption("interval", 1, 86_400).pipe(Options.withDefault(300)),
  timer: Options.boolean("timer").pipe(
    Options.withDescription("Record the pass as started by the timer unit (the rendered units pass it)")
  ),
  printUnits: Options.boolean("print-units").pipe(
    Options.withDescription("Print the systemd service + timer (or, with --os darwin, the launchd plist) for --once")
  ),
  os: Options.choice("os", ["linux", "darwin"]).pipe(Options.optional),
  user: Options.text("user").pipe(
    Options.withDescription("The account the unit runs as (default keel); it deletes only caches it owns"),
    Options.optional
  ),
  group: Options.text("group").pipe(Options.optional),
  // Not --env-file: Node 20 reads --env-file anywhere on its command line, before ctl sees it.
  envFile: Options.text("settings-file").pipe(
    Options.withDescription("Where the systemd unit reads its settings (default /etc/keel/disk-cleanup.env)"),
    Options.optional
  ),
  ctlCommand: Options.text("ctl").pipe(Options.withDefault("/usr/local/bin/ctl")),
  json
}

const diskCleanup = Command.make("disk-cleanup", diskCleanupConfig, (args) => impl((m) => m.diskCleanup(args))).pipe(
  Command.withDescription("The disk janitor on this host: one pass, a preview, or a watch loop"),
  // A preview creates nothing, not even the database.
  Command.provide(({ dryRun, printUnits }) => (dryRun || printUnits ? JanitorPreviewLive : JanitorLive))
)

const target = Args.text({ name: "TARGET" })

const here = Options.boolean("here").pipe(
  Options.withDescription("Act on this host whatever its name (how a remote pass is invoked through the channel)")
)

export const reportConfig = { target, here, json }

const report = Command.make("report", reportConfig, (args) => impl((m) => m.report(args))).pipe(
  Command.withDescription("The full recorded pass under cleanup_state.report")
)

export const cleanersListConfig = { target, json }

const cleanersList = Command.make("list", cleanersListConfig, (args) => impl((m) => m.cleanersList(args))).pipe(
  Command.withDescription("The cleaners and the target's settings for each")
)

export const reclaimConfig = {
  target,
  stage: Options.choice("stage", ["registry_cleanup"]).pipe(Options.withDefault("registry_cleanup" as const)),
  dryRun: Options.boolean("dry-run"),
  apply: Options.boolean("apply"),
  reason: Options.text("reason").pipe(Options.optional),
  here,
  json
}

const reclaim = Command.make("reclaim", reclaimConfig, (args) => impl((m) => m.reclaim(args))).pipe(
  Command.withDescription("Reclaim space toward the target now (--dry-run previews; --apply --reason deletes)")
)

export const space = Command.make("space").pipe(
  Command.withDescription("Disk space: the janitor's reports, cleaners and reclamation"),
  Command.withSubcommands([
    report.pipe(Command.provide(HostOpsLive)),
    Command.make("cleaners").pipe(Command.withSubcommands([cleanersList]), Command.provide(HostOpsLive)),
    reclaim.pipe(Command.provide(({ dryRun }) => (dryRun ? HostOpsPreviewLive : HostOpsLive)))
  ])
)

export { diskCleanup }
