import { execFile } from "node:child_process"
import * as fs from "node:fs/promises"
import { Context, Effect, Layer } from "effect"
import { childEnv } from "../../platform/ChildEnv.js"
import { sha256Hex } from "../../platform/Digest.js"
import type { UnitState } from "./Beacon.js"

export interface DeclaredUnit {
  readonly name: string
  readonly unit: string
}

/**
 * Reads the state of a host's declared units from its service manager: systemd on Linux, launchd on
 * macOS. It only reads; every failure is reported in the unit's `error`, never thrown.
 */
export class ServiceManager extends Context.Tag("fleet/ServiceManager")<
  ServiceManager,
  { readonly inspect: (unit: DeclaredUnit) => Effect.Effect<UnitState> }
>() {}

const run = (command: string, args: ReadonlyArray<string>) =>
  Effect.async<{ readonly code: number; readonly stdout: string; readonly stderr: string }>((resume) => {
    const child = execFile(
      command,
      [...args],
      { timeout: 10_000, maxBuffer: 1024 * 1024, env: childEnv() },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : 127
        resume(Effect.succeed({ code, stdout: String(stdout), stderr: String(stderr || (error?.message ?? "")) }))
      }
    )
    // Interrupted: the child goes too.
    return Effect.sync(() => child.kill("SIGKILL"))
  })

/** The live process's executable and its SHA-256, where the OS lets us read them. */
export const liveProcess = (pid: number) =>
  Effect.promise(async () => {
    try {
      const executable = await fs.readlink(`/proc/${pid}/exe`)
      try {
        const bytes = await fs.readFile(executable)
        return { pid, executable, sha256: sha256Hex(bytes) }
      } catch {
        return { pid, executable, sha256: null }
      }
    } catch {
      return { pid, executable: null, sha256: null }
    }
  })

const unitName = (unit: string) => unit.split("/").pop() ?? unit

const empty = (declared: DeclaredUnit, manager: "systemd" | "launchd", error: string): UnitState => ({
  name: declared.name,
  unit: declared.unit,
  manager,
  load_state: null,
  active_state: null,
  sub_state: null,
  main_pid: null,
  exec_start: null,
  fragment_path: null,
  process: null,
  error
})

/** `systemctl show` properties of the unit, and its main process's binary. */
export const Systemd = Layer.succeed(ServiceManager, {
  inspect: (declared) =>
    Effect.gen(function* () {
      const result = yield* run("systemctl", [
        "show",
        "--property=LoadState,ActiveState,SubState,MainPID,ExecStart,FragmentPath",
        unitName(declared.unit)
      ])
      if (result.code !== 0)
        return empty(declared, "systemd", result.stderr.trim().split("\n")[0] ?? "systemctl failed")
      const props = new Map(
        result.stdout
          .split("\n")
          .filter((line) => line.includes("="))
          .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)] as const)
      )
      const pid = Number(props.get("MainPID") ?? "0")
      const orNull = (value: string | undefined) => (value === undefined || value === "" ? null : value)
      return {
        ...empty(declared, "systemd", ""),
        error: null,
        load_state: orNull(props.get("LoadState")),
        active_state: orNull(props.get("ActiveState")),
        sub_state: orNull(props.get("SubState")),
        main_pid: Number.isInteger(pid) ? pid : null,
        exec_start: orNull(props.get("ExecStart")),
        fragment_path: orNull(props.get("FragmentPath")),
        process: pid > 0 ? yield* liveProcess(pid) : null
      }
    })
})

/** `launchctl print system/<label>`: state, pid and program of a daemon. */
export const Launchd = Layer.succeed(ServiceManager, {
  inspect: (declared) =>
    Effect.gen(function* () {
      const label = unitName(declared.unit).replace(/\.plist$/, "")
      const result = yield* run("launchctl", ["print", `system/${label}`])
      if (result.code !== 0)
        return empty(declared, "launchd", result.stderr.trim().split("\n")[0] ?? "launchctl failed")
      const field = (name: string) => new RegExp(`^\\s*${name} = (.*)$`, "m").exec(result.stdout)?.[1]?.trim() ?? null
      const pid = Number(field("pid") ?? "0")
      return {
        ...empty(declared, "launchd", ""),
        error: null,
        load_state: "loaded",
        active_state: field("state"),
        sub_state: null,
        main_pid: pid > 0 ? pid : null,
        exec_start: field("program"),
        fragment_path: field("path"),
        process: pid > 0 ? { pid, executable: field("program"), sha256: null } : null
      }
    })
})

/** The service manager of the OS this process runs on. */
export const ServiceManagerLive = process.platform === "darwin" ? Launchd : Systemd
