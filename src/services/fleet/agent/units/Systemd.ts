import * as fs from "node:fs/promises"
import { Config, Effect, Layer } from "effect"
import { UnitCommandFailed, UnitPreflightRejected } from "../../../../contracts/fleet/HostAgent.js"
import {
  type DeclaredUnit,
  emptyUnitState,
  fileSha256,
  liveProcess,
  runCommand,
  ServiceManager,
  stagedInstall,
  type UnitHost,
  unitName,
  unitOperations
} from "../../shared/units/ServiceManager.js"

const firstLine = (text: string, fallback: string) => text.trim().split("\n")[0] || fallback

/**
 * systemd: `systemctl show` for the state, `systemd-analyze verify` as the preflight of a changed unit,
 * `daemon-reload`, then start/restart and a read-back. `scope: "user"` drives the user's manager
 * (`systemctl --user`), e.g. a service account without root.
 */
export const makeSystemd = (scope: "system" | "user" = "system"): ServiceManager["Type"] => {
  const flags = scope === "user" ? ["--user"] : []
  const systemctl = (args: ReadonlyArray<string>) => runCommand("systemctl", [...flags, ...args])

  const inspect = (declared: DeclaredUnit) =>
    Effect.gen(function* () {
      const result = yield* systemctl([
        "show",
        "--property=LoadState,ActiveState,SubState,MainPID,ExecStart,FragmentPath,NeedDaemonReload,UnitFileState,InvocationID",
        unitName(declared.unit)
      ])
      if (result.code !== 0) return emptyUnitState(declared, "systemd", firstLine(result.stderr, "systemctl failed"))
      const props = new Map(
        result.stdout
          .split("\n")
          .filter((line) => line.includes("="))
          .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)] as const)
      )
      const pid = Number(props.get("MainPID") ?? "0")
      const orNull = (value: string | undefined) => (value === undefined || value === "" ? null : value)
      return {
        ...emptyUnitState(declared, "systemd", null),
        load_state: orNull(props.get("LoadState")),
        active_state: orNull(props.get("ActiveState")),
        sub_state: orNull(props.get("SubState")),
        main_pid: Number.isInteger(pid) ? pid : null,
        exec_start: orNull(props.get("ExecStart")),
        fragment_path: orNull(props.get("FragmentPath")),
        process: pid > 0 ? yield* liveProcess(pid, declared.program) : null,
        need_daemon_reload: props.has("NeedDaemonReload") ? props.get("NeedDaemonReload") === "yes" : null,
        unit_file_state: orNull(props.get("UnitFileState")),
        invocation_id: orNull(props.get("InvocationID")),
        program_sha256: declared.program === undefined ? null : yield* fileSha256(declared.program)
      }
    })

  const preflight = (staged: string) =>
    Effect.gen(function* () {
      const result = yield* runCommand("systemd-analyze", [...flags, "verify", staged])
      if (result.code !== 0)
        return yield* new UnitPreflightRejected({
          unit: staged,
          detail: `systemd-analyze verify: ${firstLine(result.stderr, `exit ${result.code}`)}`
        })
    })

  const fail = (unit: string, command: string) => (result: { code: number; stderr: string }) =>
    result.code === 0
      ? Effect.void
      : new UnitCommandFailed({ unit, command, detail: firstLine(result.stderr, `exit ${result.code}`) })

  const host: UnitHost = {
    manager: "systemd",
    inspect,
    readFile: (file) => Effect.promise(() => fs.readFile(file, "utf8").catch(() => null)),
    preflight,
    install: stagedInstall(preflight),
    reload: (units) => Effect.flatMap(systemctl(["daemon-reload"]), fail(units.join(" "), "systemctl daemon-reload")),
    control: (verb, unit) => Effect.flatMap(systemctl([verb, unit]), fail(unit, `systemctl ${verb} ${unit}`)),
    settle: "10 seconds"
  }
  return unitOperations(host)
}

export const Systemd = Layer.effect(
  ServiceManager,
  Effect.map(
    Config.literal("system", "user")("KEEL_SYSTEMD_SCOPE").pipe(Config.withDefault("system" as const), Effect.orDie),
    makeSystemd
  )
)
