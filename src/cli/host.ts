import * as path from "node:path"
import { Args, Command, Options } from "@effect/cli"
import { Effect, Option, Schema } from "effect"
import { HostBeacon } from "../contracts/fleet/Beacon.js"
import { FleetConfigLive, HostOpsLive, HostStateLive, RecoveryLive, ServicesLive } from "../layers/Live.js"
import { beaconRouting, publishBeacon } from "../services/fleet/beacon/BeaconPublisher.js"
import { beaconUnitProblem, renderEnvFile, renderLaunchd, renderSystemd } from "../services/fleet/beacon/BeaconUnits.js"
import { collectBeacon } from "../services/fleet/beacon/BeaconWriter.js"
import { HostHealth } from "../services/fleet/beacon/HostHealth.js"
import { HostStatePublisher } from "../services/fleet/beacon/HostStatePublisher.js"
import { Gates } from "../services/fleet/gates/Gates.js"
import { HostAgent } from "../services/fleet/HostAgent.js"
import { RemoteCtl } from "../services/fleet/RemoteCtl.js"
import { FleetRegistry } from "../services/fleet/registry/Registry.js"
import { unitEnvironment } from "../services/fleet/UnitSettings.js"
import { ServiceManagerLive } from "../services/fleet/units/ServiceManagerLive.js"
import { AppConfig, thisHostName } from "../services/platform/AppConfig.js"
import { writeFileAtomically } from "../services/platform/Files.js"
import { HostChannel } from "../services/platform/hostchannel/HostChannel.js"
import { gateway } from "./gateway.js"
import { storageRootReconcile } from "./handoff.js"
import { CommandFailed, ExitWith, emit, integerOption, json, table } from "./Output.js"
import { precheckRunner } from "./precheck.js"
import { declareVersion, recover, release } from "./recover.js"

const hostOption = Options.text("host").pipe(
  Options.optional,
  Options.withDescription("The registry target this host is (default: KEEL_HOST, then the hostname)")
)
const bundledRegistry = Options.boolean("bundled-registry").pipe(
  Options.withDescription("Use the registry shipped inside the package")
)

const writeFile = (file: string, text: string, mode?: number) =>
  Effect.try({
    try: () => writeFileAtomically(file, text, mode),
    catch: (error) => new CommandFailed({ detail: `could not write ${file}: ${(error as Error).message}` })
  })

const write = Command.make(
  "write",
  {
    out: Options.file("out").pipe(
      Options.optional,
      Options.withDescription("Write here (atomically) instead of stdout")
    ),
    host: hostOption,
    bundledRegistry
  },
  ({ bundledRegistry, host, out }) =>
    Effect.gen(function* () {
      const registry = yield* FleetRegistry
      const snapshot = yield* (bundledRegistry ? registry.bundled() : registry.read({ allowCached: true })).pipe(
        Effect.mapError((error) => new CommandFailed({ detail: error.detail }))
      )
      const name = Option.isSome(host) ? host.value : yield* thisHostName.pipe(Effect.orDie)
      const target = snapshot.registry.targets.find((t) => t.name === name)
      if (target === undefined)
        return yield* new CommandFailed({ detail: `${name} is not a target of the registry (use --host)` })
      const beacon = yield* collectBeacon(target).pipe(Effect.provide(ServiceManagerLive))
      const text = `${JSON.stringify(Schema.encodeSync(HostBeacon)(beacon), null, 2)}\n`
      if (Option.isSome(out)) {
        yield* writeFile(out.value, text)
        yield* emit(false, out.value, (file) => `beacon for ${beacon.host} written to ${file}`)
      } else yield* emit(false, text.trimEnd(), (t) => t)
    })
).pipe(Command.withDescription("Collect this host's disk and unit state into a beacon document"))

const install = Command.make(
  "install",
  {
    print: Options.boolean("print").pipe(Options.withDescription("Print the rendered units instead of writing them")),
    dir: Options.directory("dir").pipe(Options.optional, Options.withDescription("Write the rendered files here")),
    os: Options.choice("os", ["linux", "darwin"]).pipe(Options.optional),
    ctlCommand: Options.text("ctl").pipe(
      Options.withDefault("/usr/local/bin/ctl"),
      Options.withDescription("The ctl command the units run (absolute)")
    ),
    beaconFile: Options.text("beacon-file").pipe(Options.withDefault("/var/lib/keel/beacon.json")),
    envFile: Options.text("routing-file").pipe(Options.withDefault("/etc/keel/beacon.env")),
    interval: integerOption("interval", 1, 86_400).pipe(
      Options.withDefault(300),
      Options.withDescription("Seconds between beacons")
    ),
    user: Options.text("user").pipe(
      Options.optional,
      Options.withDescription("The account the units run as (default keel)")
    ),
    group: Options.text("group").pipe(Options.optional),
    controlPlaneUrl: Options.text("control-plane-url").pipe(Options.withDefault("https://control.example.internal")),
    vaultUrl: Options.text("vault-url").pipe(Options.withDefault("https://control.example.internal")),
    consumer: Options.text("consumer").pipe(
      Options.optional,
      Options.withDescription("The vault consumer of the beacon grant (default beacon-<this host>)")
    ),
    grantFile: Options.text("grant-file").pipe(Options.withDefault("/etc/keel/beacon-grant.json")),
    stateGrantFile: Options.text("state-grant-file").pipe(
      Options.optional,
      Options.withDescription(
        "A grant with host-state-write for this host: each run then also publishes its capacity and janitor report"
      )
    )
  },
  (options) =>
    Effect.gen(function* () {
      const target = Option.getOrElse(options.os, () => (process.platform === "darwin" ? "darwin" : "linux"))
      const environment = yield* unitEnvironment
      const unitOptions = {
        ctl: options.ctlCommand.split(" ").filter((p) => p.length > 0),
        beaconFile: options.beaconFile,
        envFile: options.envFile,
        intervalSeconds: options.interval,
        user: Option.getOrUndefined(options.user),
        group: Option.getOrUndefined(options.group),
        environment,
        routing: {
          controlPlaneUrl: options.controlPlaneUrl,
          vaultUrl: options.vaultUrl,
          consumer: Option.getOrElse(options.consumer, () => `beacon-${environment.KEEL_HOST}`),
          grantFile: options.grantFile,
          stateGrantFile: Option.getOrUndefined(options.stateGrantFile)
        }
      }
      const problem = beaconUnitProblem(unitOptions)
      if (problem !== undefined) return yield* new CommandFailed({ detail: problem })
      const files: Record<string, string> =
        target === "darwin"
          ? renderLaunchd(unitOptions)
          : { ...renderSystemd(unitOptions), [path.basename(options.envFile)]: renderEnvFile(unitOptions) }
      if (options.print || Option.isNone(options.dir)) {
        return yield* emit(false, files, (all) =>
          Object.entries(all)
            .map(([name, text]) => `# ${name}\n${text}`)
            .join("\n")
        )
      }
      // The routing file and the plist carry ctl's settings, which may hold a credential (a KEEL_REGISTRY URL
      // with a token): owner-only, read by the service manager as root. The units themselves are public.
      const settingsFiles = new Set([
        path.basename(options.envFile),
        ...Object.keys(files).filter((n) => n.endsWith(".plist"))
      ])
      for (const [name, text] of Object.entries(files))
        yield* writeFile(path.join(options.dir.value, name), text, settingsFiles.has(name) ? 0o600 : 0o644)
      yield* emit(
        false,
        Object.keys(files),
        (names) => `wrote ${names.join(", ")} to ${Option.getOrElse(options.dir, () => "")}`
      )
    })
).pipe(Command.withDescription("Render the beacon's systemd service + timer (Linux) or launchd plist (macOS)"))

const publish = Command.make(
  "publish-beacon",
  {
    file: Args.file({ name: "FILE" }),
    envFile: Options.file("routing-file").pipe(
      Options.optional,
      Options.withDescription("Routing KEY=value lines (the units' EnvironmentFile); the environment wins")
    ),
    json
  },
  ({ envFile, file, json }) =>
    Effect.gen(function* () {
      const routing = yield* beaconRouting(envFile)
      const stored = yield* publishBeacon(file, routing)
      yield* emit(json, stored, (s) => `published ${s.host} (${s.reported_at}) to ${s.key}`)
    }).pipe(
      Effect.catchTag("BeaconPublishFailed", (error) =>
        Effect.fail(new CommandFailed({ code: error.reason.toUpperCase(), detail: `${error.reason}: ${error.detail}` }))
      )
    )
).pipe(Command.withDescription("Exchange the beacon grant for a token and PUT the beacon to the control plane"))

const publishState = Command.make("publish-state", { json }, ({ json }) =>
  Effect.gen(function* () {
    const published = yield* (yield* HostStatePublisher).publish()
    yield* emit(
      json,
      published,
      (p) =>
        `published ${p.host}: capacity ${p.capacity.document.state} (${p.capacity.document.reason}), janitor ${p.janitor.outcome}`
    )
  }).pipe(
    Effect.catchTag("HostStatePublishFailed", (error) =>
      Effect.fail(new CommandFailed({ detail: `${error.code}: ${error.detail}` }))
    )
  )
).pipe(
  Command.withDescription(
    "Measure this host's capacity, take its janitor's last pass, and PUT both through the control plane's object API"
  )
)

/** All of standard input (for `host exec --stdin`). */
const readStdin = async () => {
  const chunks: Array<Buffer> = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return new Uint8Array(Buffer.concat(chunks))
}

/** The registry target named on the command line (current registry, or its last valid snapshot). */
const targetNamed = (name: string) =>
  Effect.flatMap(RemoteCtl, (remote) => remote.target(name)).pipe(
    Effect.mapError((error) => new CommandFailed({ detail: error.detail }))
  )

const exec = Command.make(
  "exec",
  {
    target: Args.text({ name: "TARGET" }),
    command: Args.text({ name: "COMMAND" }).pipe(Args.atLeast(1)),
    timeout: integerOption("timeout", 1, 86_400).pipe(Options.withDefault(600), Options.withDescription("Seconds")),
    stdin: Options.boolean("stdin").pipe(
      Options.withDescription("Forward this process's standard input to the command (read to its end first)")
    )
  },
  ({ command, stdin, target, timeout }) =>
    Effect.gen(function* () {
      const spec = (yield* RemoteCtl).spec(yield* targetNamed(target))
      const input = stdin ? yield* Effect.promise(() => readStdin()) : undefined
      const result = yield* (yield* HostChannel)
        .run(spec, {
          argv: command,
          stdin: input,
          timeoutMs: timeout * 1000,
          onOutput: (stream, chunk) => (stream === "stdout" ? process.stdout : process.stderr).write(chunk)
        })
        .pipe(Effect.mapError((error) => new CommandFailed({ detail: error.detail })))
      if (result.timedOut) return yield* new CommandFailed({ detail: `timed out after ${timeout} s` })
      if (result.exitCode !== 0) return yield* new ExitWith({ code: result.exitCode ?? 1 })
    })
).pipe(
  Command.withDescription(
    "Run a command on a target: ctl host exec [--stdin] [--timeout S] TARGET -- ARGV… (options before --); exits with its exit code"
  )
)

/** The host's state now: its beacon, collected on the host itself (its agent: through its channel when remote). */
const currentBeacon = (targetName: string) =>
  Effect.gen(function* () {
    const target = yield* targetNamed(targetName)
    return yield* (yield* HostAgent)
      .for(target)
      .beacon.pipe(Effect.mapError((error) => new CommandFailed({ detail: error.detail })))
  })

const gib = (bytes: number | null) => (bytes === null ? "unknown" : `${(bytes / 1024 ** 3).toFixed(1)} GiB`)

const health = Command.make("health", { target: Args.text({ name: "TARGET" }), json }, ({ json, target }) =>
  Effect.gen(function* () {
    const beacon = yield* currentBeacon(target)
    yield* emit(json, beacon, (b) =>
      [
        `${b.host} (${b.os}) at ${b.reported_at}, ctl ${b.writer_version}`,
        table(
          ["MOUNT", "FREE", "AVAILABLE", "TOTAL", "ERROR"],
          b.disks.map((d) => [d.mount, gib(d.free_bytes), gib(d.available_bytes), gib(d.total_bytes), d.error ?? ""])
        ),
        table(
          ["UNIT", "STATE", "PID", "BINARY", "ERROR"],
          b.units.map((u) => [
            u.name,
            [u.load_state, u.active_state, u.sub_state].filter((x) => x !== null).join("/") || "unknown",
            u.main_pid === null ? "-" : String(u.main_pid),
            u.process?.executable ?? "-",
            u.error ?? ""
          ])
        )
      ].join("\n")
    )
  })
).pipe(Command.withDescription("The host's state now: disks and declared units, read on the host"))

const inventory = Command.make("inventory", { target: Args.text({ name: "TARGET" }), json }, ({ json, target }) =>
  Effect.gen(function* () {
    const declared = yield* targetNamed(target)
    const beacon = yield* currentBeacon(target)
    const uname = yield* (yield* HostAgent).for(declared).kernel
    const body = {
      host: declared.name,
      os: declared.os,
      kernel: uname,
      roles: declared.roles,
      tool_version: beacon.writer_version,
      reported_at: beacon.reported_at,
      disks: beacon.disks,
      units: beacon.units
    }
    yield* emit(json, body, (b) =>
      [
        `${b.host}: ${b.kernel ?? b.os}, roles ${b.roles.join(", ") || "-"}, ctl ${b.tool_version}`,
        ...b.disks.map((d) => `  ${d.mount}: ${gib(d.free_bytes)} free of ${gib(d.total_bytes)}`),
        ...b.units.map((u) => `  ${u.name}: ${u.active_state ?? "unknown"}`)
      ].join("\n")
    )
  })
).pipe(Command.withDescription("What the host is: kernel, roles, tool version, disks, units"))

const gates = Command.make("gates", { target: Args.text({ name: "HOST" }), json }, ({ json, target }) =>
  Effect.gen(function* () {
    const report = yield* (yield* Gates).report(target)
    yield* emit(json, report, (r) =>
      [
        r.claiming === null
          ? `${r.host}: INCOMPLETE (the diagnostic could not finish; see the observations)`
          : r.claiming.admits
            ? `${r.host}: ADMITS work`
            : `${r.host}: REFUSES work: ${r.claiming.reasons.join(", ")}`,
        `disk ${r.disk.mount ?? "?"}: ${r.disk.free_gb === null ? "unknown" : `${r.disk.free_gb} GiB free`}` +
          `${r.disk.low_free_gb === null ? "" : ` (watermark ${r.disk.low_free_gb} GiB${r.below_watermark ? ", BELOW" : ""})`}` +
          `; pressure from ${r.pressure_source}`,
        table(
          ["OPERATION", "SOURCE", "STATE", "MS", "ERROR"],
          r.observations.map((o) => [
            o.operation,
            o.source,
            o.state,
            o.elapsed_ms === null ? "-" : String(o.elapsed_ms),
            o.error ?? ""
          ])
        )
      ].join("\n")
    )
    if (!report.complete) return yield* new ExitWith({ code: 1 })
  })
).pipe(Command.withDescription("Why the host does or does not admit work; exit 1 when the diagnostic is incomplete"))

const clear = Command.make("clear", { target: Args.text({ name: "TARGET" }), json }, ({ json, target }) =>
  Effect.gen(function* () {
    const existed = yield* (yield* HostHealth)
      .clear(target)
      .pipe(Effect.mapError((error) => new CommandFailed({ detail: error.detail })))
    yield* emit(json, { host: target, cleared: existed }, (r) =>
      r.cleared
        ? `${r.host}: stored beacon removed; the next beacon is stored whatever its date`
        : `${r.host}: no stored beacon`
    )
  })
).pipe(
  Command.withDescription(
    "Remove a host's stored beacon on this control plane (a bad one: a wrong clock, a wrong host)"
  )
)

export const host = Command.make("host").pipe(
  Command.withDescription("Fleet hosts: beacons, remote commands, health and inventory"),
  Command.withSubcommands([
    Command.make("beacon").pipe(
      Command.withDescription("Write a beacon, or render the units that publish it"),
      Command.withSubcommands([
        write.pipe(Command.provide(ServicesLive)),
        install.pipe(Command.provide(AppConfig.Default)),
        clear.pipe(Command.provide(ServicesLive))
      ])
    ),
    publish.pipe(Command.provide(FleetConfigLive)),
    publishState.pipe(Command.provide(HostStateLive)),
    exec.pipe(Command.provide(HostOpsLive)),
    health.pipe(Command.provide(HostOpsLive)),
    inventory.pipe(Command.provide(HostOpsLive)),
    gates.pipe(Command.provide(HostOpsLive)),
    storageRootReconcile.pipe(Command.provide(FleetConfigLive)),
    recover.pipe(Command.provide(RecoveryLive)),
    release.pipe(Command.provide(RecoveryLive)),
    declareVersion.pipe(Command.provide(ServicesLive)),
    precheckRunner,
    gateway
  ])
)
// Options are named --routing-file, not --env-file: Node 20 scans the whole argv for --env-file.
