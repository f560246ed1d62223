import * as path from "node:path"
import { Effect, Option, Schema } from "effect"
import { HostBeacon } from "../../contracts/fleet/Beacon.js"
import { beaconRouting, publishBeacon } from "../../services/fleet/agent/beacon/BeaconPublisher.js"
import {
  beaconUnitProblem,
  renderEnvFile,
  renderLaunchd,
  renderSystemd
} from "../../services/fleet/agent/beacon/BeaconUnits.js"
import { collectBeacon } from "../../services/fleet/agent/beacon/BeaconWriter.js"
import { HostStatePublisher } from "../../services/fleet/agent/beacon/HostStatePublisher.js"
import { ServiceManagerLive } from "../../services/fleet/agent/units/ServiceManagerLive.js"
import { HostHealth } from "../../services/fleet/control/beacon/HostHealth.js"
import { Gates } from "../../services/fleet/control/gates/Gates.js"
import { RemoteCtl } from "../../services/fleet/control/RemoteCtl.js"
import { HostAgent } from "../../services/fleet/shared/HostAgent.js"
import { FleetRegistry } from "../../services/fleet/shared/registry/Registry.js"
import { unitEnvironment } from "../../services/fleet/shared/UnitSettings.js"
import { thisHostName } from "../../services/platform/AppConfig.js"
import { writeFileAtomically } from "../../services/platform/Files.js"
import { HostChannel } from "../../services/platform/hostchannel/HostChannel.js"
import type {
  clearConfig,
  execConfig,
  gatesConfig,
  healthConfig,
  installConfig,
  inventoryConfig,
  publishConfig,
  writeConfig
} from "../host.js"
import type { Parsed } from "../Lazy.js"
import { CommandFailed, ExitWith, emit, table } from "../Output.js"

const writeFile = (file: string, text: string, mode?: number) =>
  Effect.try({
    try: () => writeFileAtomically(file, text, mode),
    catch: (error) => new CommandFailed({ detail: `could not write ${file}: ${(error as Error).message}` })
  })

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

/** The host's state now: its beacon, collected on the host itself (its agent: through its channel when remote). */
const currentBeacon = (targetName: string) =>
  Effect.gen(function* () {
    const target = yield* targetNamed(targetName)
    return yield* (yield* HostAgent)
      .for(target)
      .beacon.pipe(Effect.mapError((error) => new CommandFailed({ detail: error.detail })))
  })

const gib = (bytes: number | null) => (bytes === null ? "unknown" : `${(bytes / 1024 ** 3).toFixed(1)} GiB`)

export const write = ({ bundledRegistry, host, out }: Parsed<typeof writeConfig>) =>
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

export const install = (options: Parsed<typeof installConfig>) =>
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

export const publish = ({ envFile, file, json }: Parsed<typeof publishConfig>) =>
  Effect.gen(function* () {
    const routing = yield* beaconRouting(envFile)
    const stored = yield* publishBeacon(file, routing)
    yield* emit(json, stored, (s) => `published ${s.host} (${s.reported_at}) to ${s.key}`)
  }).pipe(
    Effect.catchTag("BeaconPublishFailed", (error) =>
      Effect.fail(new CommandFailed({ code: error.reason.toUpperCase(), detail: `${error.reason}: ${error.detail}` }))
    )
  )

export const publishState = ({ json }: { readonly json: boolean }) =>
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

export const exec = ({ command, stdin, target, timeout }: Parsed<typeof execConfig>) =>
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

export const health = ({ json, target }: Parsed<typeof healthConfig>) =>
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

export const inventory = ({ json, target }: Parsed<typeof inventoryConfig>) =>
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

export const gates = ({ json, target }: Parsed<typeof gatesConfig>) =>
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

export const clear = ({ json, target }: Parsed<typeof clearConfig>) =>
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
