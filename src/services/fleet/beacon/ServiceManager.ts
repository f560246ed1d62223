import { execFile } from "node:child_process"
import { createHash } from "node:crypto"
import { createReadStream } from "node:fs"
import * as fs from "node:fs/promises"
import { Context, Effect, Layer } from "effect"
import { childEnv } from "../../platform/ChildEnv.js"
import type { UnitState } from "./Beacon.js"

export interface DeclaredUnit {
  readonly name: string
  readonly unit: string
  /** The executable the unit must run (the registry's `program`), hashed on disk when declared. */
  readonly program?: string | undefined
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

/** SHA-256 of a file, read in chunks; null when it cannot be read. */
export const fileSha256 = (file: string) =>
  Effect.promise(async () => {
    try {
      const hash = createHash("sha256")
      for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer)
      return hash.digest("hex")
    } catch {
      return null
    }
  })

/**
 * The live process's executable and its SHA-256, where the OS lets us read them. An executable replaced on
 * disk since the process started reads as `<path> (deleted)`: the process runs a stale copy, and its hash is
 * read from the process's own image (/proc/<pid>/exe), so it still says what is running.
 */
export const liveProcess = (pid: number) =>
  Effect.promise(async () => {
    try {
      const executable = await fs.readlink(`/proc/${pid}/exe`)
      const sha256 = await Effect.runPromise(fileSha256(`/proc/${pid}/exe`))
      return { pid, executable, sha256 }
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
  need_daemon_reload: null,
  unit_file_state: null,
  invocation_id: null,
  program_sha256: null,
  error
})

/** `systemctl show` properties of the unit, and its main process's binary. */
export const Systemd = Layer.succeed(ServiceManager, {
  inspect: (declared) =>
    Effect.gen(function* () {
      const result = yield* run("systemctl", [
        "show",
        "--property=LoadState,ActiveState,SubState,MainPID,ExecStart,FragmentPath,NeedDaemonReload,UnitFileState,InvocationID",
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
        process: pid > 0 ? yield* liveProcess(pid) : null,
        need_daemon_reload: props.has("NeedDaemonReload") ? props.get("NeedDaemonReload") === "yes" : null,
        unit_file_state: orNull(props.get("UnitFileState")),
        invocation_id: orNull(props.get("InvocationID")),
        program_sha256: declared.program === undefined ? null : yield* fileSha256(declared.program)
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
        // launchd does not give the running image: the declared program's path and hash stand in for it, so
        // a replaced binary is not detectable here (rows resolve to identity_unresolved; docs/beacon.md).
        process: pid > 0 ? { pid, executable: field("program"), sha256: null } : null,
        program_sha256: declared.program === undefined ? null : yield* fileSha256(declared.program)
      }
    })
})

/** The service manager of the OS this process runs on. */
export const ServiceManagerLive = process.platform === "darwin" ? Launchd : Systemd

/**
 * A service manager in memory, for tests and embedders: units are what `set` put there (a unit never set
 * reads as not found, as systemd answers for an unknown unit).
 */
export const makeMemoryServiceManager = () => {
  const units = new Map<string, Omit<UnitState, "name" | "unit" | "manager" | "error">>()
  const manager: ServiceManager["Type"] = {
    inspect: (declared) =>
      Effect.sync(() => {
        const found = units.get(unitName(declared.unit))
        return found === undefined
          ? { ...empty(declared, "systemd", ""), error: null, load_state: "not-found", active_state: "inactive" }
          : { ...found, name: declared.name, unit: declared.unit, manager: "systemd" as const, error: null }
      })
  }
  return {
    manager,
    set: (unit: string, state: Omit<UnitState, "name" | "unit" | "manager" | "error">) =>
      void units.set(unitName(unit), state)
  }
}

export const MemoryServiceManager = (memory = makeMemoryServiceManager()) =>
  Layer.succeed(ServiceManager, memory.manager)
