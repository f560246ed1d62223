import { Effect, Layer } from "effect"
import type { UnitState } from "../../../../contracts/fleet/Beacon.js"
import { UnitCommandFailed, UnitPreflightRejected } from "../../../../contracts/fleet/HostAgent.js"
import {
  type DeclaredUnit,
  emptyUnitState,
  ServiceManager,
  type UnitHost,
  unitName,
  unitOperations
} from "./ServiceManager.js"
import { parseCommandLine } from "./UnitRender.js"

type StoredState = Omit<UnitState, "name" | "unit" | "manager" | "error">

const notFound: StoredState = {
  ...emptyUnitState({ name: "", unit: "" }, "systemd", null),
  load_state: "not-found",
  active_state: "inactive"
}

/**
 * A service manager in memory that behaves like systemd for tests and embedders: unit files, loaded
 * definitions, processes (a pid and the hash of the program they started from) and every command that would
 * change a host, in order (`commands`). A unit never set or installed reads as not found, as systemd answers
 * for an unknown unit. `failNext(command)` makes the next such command fail on the "host".
 */
export const makeMemoryServiceManager = () => {
  const units = new Map<string, StoredState>()
  const files = new Map<string, string>()
  /** The SHA-256 of each program file "on disk". */
  const programs = new Map<string, string>()
  const commands: Array<string> = []
  const failing = new Set<string>()
  const rejecting = new Set<string>()
  let nextPid = 1000
  let invocations = 0

  const record = (command: string) =>
    Effect.gen(function* () {
      commands.push(command)
      if (failing.delete(command))
        return yield* new UnitCommandFailed({
          unit: command.split(" ").pop() ?? "",
          command,
          detail: "injected failure"
        })
    })

  const stored = (unit: string) => units.get(unitName(unit)) ?? notFound

  const host: UnitHost = {
    manager: "systemd",
    inspect: (declared: DeclaredUnit) =>
      Effect.sync(() => {
        const state = stored(declared.unit)
        const onDisk = declared.program === undefined ? null : (programs.get(declared.program) ?? state.program_sha256)
        return {
          ...state,
          program_sha256: onDisk,
          name: declared.name,
          unit: declared.unit,
          manager: "systemd",
          error: null
        }
      }),
    readFile: (file) => Effect.sync(() => files.get(file) ?? null),
    preflight: (staged) =>
      rejecting.has(unitName(staged))
        ? new UnitPreflightRejected({ unit: staged, detail: "injected preflight rejection" })
        : Effect.void,
    install: (file, text) =>
      Effect.gen(function* () {
        yield* host.preflight(file)
        yield* record(`install ${file}`)
        files.set(file, text)
        const state = units.get(unitName(file))
        if (state !== undefined) units.set(unitName(file), { ...state, need_daemon_reload: true })
      }),
    reload: (changed) =>
      Effect.gen(function* () {
        yield* record("daemon-reload")
        for (const file of changed) {
          const text = files.get(file) ?? ""
          const exec = /^ExecStart=(.*)$/m.exec(text)?.[1] ?? null
          units.set(unitName(file), {
            ...stored(file),
            load_state: "loaded",
            active_state: stored(file).load_state === "not-found" ? "inactive" : stored(file).active_state,
            fragment_path: file,
            exec_start: exec,
            need_daemon_reload: false
          })
        }
      }),
    control: (verb, unit) =>
      Effect.gen(function* () {
        yield* record(`${verb} ${unit}`)
        const state = units.get(unit)
        if (state === undefined)
          return yield* new UnitCommandFailed({ unit, command: `${verb} ${unit}`, detail: `Unit ${unit} not found.` })
        if (verb === "enable") return void units.set(unit, { ...state, unit_file_state: "enabled" })
        if (verb === "stop")
          return void units.set(unit, {
            ...state,
            active_state: "inactive",
            sub_state: "dead",
            main_pid: 0,
            process: null
          })
        const program = state.exec_start === null ? null : (parseCommandLine(state.exec_start)[0] ?? null)
        const pid = nextPid++
        units.set(unit, {
          ...state,
          active_state: "active",
          sub_state: unit.endsWith(".timer") ? "waiting" : "running",
          main_pid: unit.endsWith(".timer") ? 0 : pid,
          invocation_id: `memory-${++invocations}`,
          process: unit.endsWith(".timer")
            ? null
            : { pid, executable: program, sha256: program === null ? null : (programs.get(program) ?? null) }
        })
      }),
    settle: 0
  }

  return {
    manager: unitOperations(host),
    /** Puts a unit in a state, as if the host had brought it there. */
    set: (unit: string, state: StoredState) => void units.set(unitName(unit), state),
    /** The unit file "on disk" (as if installed before), without a command. */
    setFile: (file: string, text: string) => void files.set(file, text),
    file: (file: string) => files.get(file),
    /** The program file's SHA-256 "on disk" (a deployment replaces it). */
    setProgram: (program: string, sha256: string) => void programs.set(program, sha256),
    /** Every command that changed the host, in order ("restart keel-api.service", "daemon-reload", …). */
    commands: commands as ReadonlyArray<string>,
    failNext: (command: string) => void failing.add(command),
    rejectPreflight: (unit: string) => void rejecting.add(unitName(unit))
  }
}

export type MemoryServiceManager = ReturnType<typeof makeMemoryServiceManager>

export const MemoryServiceManager = (memory = makeMemoryServiceManager()) =>
  Layer.succeed(ServiceManager, memory.manager)
