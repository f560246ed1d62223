import { execFile } from "node:child_process"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Context, Duration, Effect } from "effect"
import type { UnitState } from "../../../../contracts/fleet/Beacon.js"
import { UnitCommandFailed, type UnitPreflightRejected } from "../../../../contracts/fleet/HostAgent.js"
import { childEnv } from "../../../platform/ChildEnv.js"
import { fileDigest } from "../../../platform/Digest.js"
import type { UnitDefinition } from "./UnitRender.js"

export interface DeclaredUnit {
  readonly name: string
  readonly unit: string
  /** The executable the unit must run (the registry's `program`), hashed on disk when declared. */
  readonly program?: string | undefined
}

/** What an ensure did, and the unit as read back afterwards. */
export interface EnsureResult {
  /** created: a missing unit was written and started; reloaded: a changed definition replaced the old one after its preflight; restarted: the definition matched and was restarted in place; kicked: the process was restarted onto the binary on disk. */
  readonly change: "created" | "reloaded" | "restarted" | "kicked" | "reasserted"
  readonly unit: string
  readonly state: UnitState
}

export type ManagerName = UnitState["manager"]

/**
 * The one port for a host's units: read their state (`inspect`: never fails, a failure is the row's
 * `error`) and change them — ensure a definition (create, restart in place, or reload after a preflight,
 * then read back and check it runs), kick a process onto its binary, start, stop, reassert a oneshot's timer.
 * Adapters: systemd, launchd, Keel's own supervisor (hosts without a service manager, and tests on real
 * processes), memory (tests and embedders).
 */
export class ServiceManager extends Context.Tag("fleet/ServiceManager")<
  ServiceManager,
  {
    readonly manager: ManagerName
    readonly inspect: (unit: DeclaredUnit) => Effect.Effect<UnitState>
    readonly ensure: (
      definition: UnitDefinition
    ) => Effect.Effect<EnsureResult, UnitCommandFailed | UnitPreflightRejected>
    readonly kick: (definition: UnitDefinition) => Effect.Effect<EnsureResult, UnitCommandFailed>
    readonly start: (unit: DeclaredUnit) => Effect.Effect<UnitState, UnitCommandFailed>
    readonly stop: (unit: DeclaredUnit) => Effect.Effect<UnitState, UnitCommandFailed>
    /** Enables and starts a oneshot's timer and checks it is active (rule 6: the beacon's repair). */
    readonly reassertTimer: (unit: DeclaredUnit) => Effect.Effect<EnsureResult, UnitCommandFailed>
  }
>() {}

export interface ManagerCommandResult {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** Runs a manager's command (argv, never a shell) with the allow-listed environment; interrupting kills it. */
export const runCommand = (command: string, args: ReadonlyArray<string>, timeoutMs = 30_000) =>
  Effect.async<ManagerCommandResult>((resume) => {
    const child = execFile(
      command,
      [...args],
      { timeout: timeoutMs, maxBuffer: 1024 * 1024, env: childEnv() },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : 127
        resume(Effect.succeed({ code, stdout: String(stdout), stderr: String(stderr || (error?.message ?? "")) }))
      }
    )
    return Effect.sync(() => child.kill("SIGKILL"))
  })

/** SHA-256 of a file, read in chunks; null when it cannot be read. */
export const fileSha256 = (file: string) =>
  Effect.promise(() =>
    fileDigest(file).then(
      (digest) => digest.sha256,
      () => null
    )
  )

/**
 * The live process's executable and its SHA-256, where the OS lets us read them. An executable replaced on
 * disk since the process started reads as `<path> (deleted)`: the process runs a stale copy, and its hash is
 * read from the process's own image (/proc/<pid>/exe), so it still says what is running.
 *
 * A declared `program` that is a script (`#!`) runs as its interpreter: the process is identified by the
 * script's path in its command line instead, and its hash is null (what the interpreter read cannot be proven,
 * so a stale script is not decidable).
 */
export const liveProcess = (
  pid: number,
  program?: string
): Effect.Effect<{ readonly pid: number; readonly executable: string | null; readonly sha256: string | null }> =>
  Effect.gen(function* () {
    const executable = yield* Effect.tryPromise(() => fs.readlink(`/proc/${pid}/exe`))
    if (program !== undefined && executable !== program && executable !== `${program} (deleted)`) {
      const script = yield* Effect.tryPromise(() => interpretedScript(pid, program))
      if (script !== undefined) return { pid, executable: script, sha256: null }
    }
    return { pid, executable, sha256: yield* fileSha256(`/proc/${pid}/exe`) }
  }).pipe(
    // Whatever the OS would not tell (no such process, no permission): nothing is known of it.
    Effect.catchAllCause(() => Effect.succeed({ pid, executable: null, sha256: null }))
  )

/** Whether `file` starts with `#!` (a script run by its interpreter); reads two bytes. */
export const isScript = async (file: string) => {
  const handle = await fs.open(file, "r").catch(() => null)
  if (handle === null) return false
  try {
    const buffer = Buffer.alloc(2)
    await handle.read(buffer, 0, 2, 0)
    return buffer.toString("latin1") === "#!"
  } finally {
    await handle.close()
  }
}

/** `program` when it is a `#!` script and the process's command line runs it (by path or real path). */
const interpretedScript = async (pid: number, program: string) => {
  if (!(await isScript(program))) return undefined
  const argv = (await fs.readFile(`/proc/${pid}/cmdline`, "utf8")).split("\0")
  const real = await fs.realpath(program).catch(() => program)
  return argv.slice(1, 3).some((arg) => arg === program || arg === real) ? program : undefined
}

export const unitName = (unit: string) => unit.split("/").pop() ?? unit

/** A row with nothing known yet: what an adapter fills in, or reports with its `error`. */
export const emptyUnitState = (declared: DeclaredUnit, manager: ManagerName, error: string | null): UnitState => ({
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

/**
 * The primitives an adapter gives; `unitOperations` builds the port's ensure/kick/start/stop on them, so
 * every adapter follows one procedure: stage and preflight a changed definition before it replaces the old
 * one, reload, (re)start, then read back and check the running postcondition.
 */
export interface UnitHost {
  readonly manager: ManagerName
  readonly inspect: (unit: DeclaredUnit) => Effect.Effect<UnitState>
  readonly readFile: (file: string) => Effect.Effect<string | null>
  /** Checks a staged unit file (systemd-analyze verify, plutil -lint, the supervisor's parse). */
  readonly preflight: (stagedFile: string) => Effect.Effect<void, UnitPreflightRejected>
  /** Writes `text` to `file` through a staged copy in the same directory that is preflighted first. */
  readonly install: (file: string, text: string) => Effect.Effect<void, UnitCommandFailed | UnitPreflightRejected>
  /** The manager re-reads changed unit files (daemon-reload). */
  readonly reload: (units: ReadonlyArray<string>) => Effect.Effect<void, UnitCommandFailed>
  readonly control: (
    verb: "start" | "stop" | "restart" | "enable",
    unit: string
  ) => Effect.Effect<void, UnitCommandFailed>
  /** How long the running postcondition is waited for. */
  readonly settle: Duration.DurationInput
}

const timerOf = (unit: string) => unit.replace(/\.service$/, ".timer")

/** Installs `text` at `file` the safe way: a staged copy beside it, preflighted, then renamed over it. */
export const stagedInstall =
  (preflight: UnitHost["preflight"]) =>
  (file: string, text: string): Effect.Effect<void, UnitCommandFailed | UnitPreflightRejected> =>
    Effect.gen(function* () {
      const staging = path.join(path.dirname(file), `.keel-staging-${process.pid}-${Date.now()}`)
      const staged = path.join(staging, path.basename(file))
      const io = (what: string, run: () => Promise<unknown>) =>
        Effect.tryPromise({
          try: run,
          catch: (error) => new UnitCommandFailed({ unit: file, command: what, detail: String(error) })
        })
      yield* io("stage", async () => {
        await fs.mkdir(staging, { recursive: true })
        await fs.writeFile(staged, text, { mode: 0o644 })
        // A unit is public whatever the process umask (the server's is 077).
        await fs.chmod(staged, 0o644)
      })
      yield* preflight(staged).pipe(
        Effect.zipRight(io("install", () => fs.rename(staged, file))),
        Effect.ensuring(Effect.promise(() => fs.rm(staging, { recursive: true, force: true })))
      )
    })

const running = (state: UnitState, definition: UnitDefinition) =>
  state.error === null &&
  state.active_state === "active" &&
  (state.main_pid ?? 0) > 0 &&
  (state.process?.executable === null ||
    state.process?.executable === undefined ||
    state.process.executable === definition.program)

/** ensure / kick / start / stop / reassertTimer on an adapter's primitives. */
export const unitOperations = (host: UnitHost): ServiceManager["Type"] => {
  const declared = (definition: UnitDefinition): DeclaredUnit => ({
    name: definition.name,
    unit: definition.unit,
    program: definition.program
  })

  /** Reads the unit back until its postcondition holds or the settle time is spent. */
  const postcondition = (definition: UnitDefinition, holds: (state: UnitState) => boolean, command: string) =>
    Effect.gen(function* () {
      const deadline = Date.now() + Duration.toMillis(host.settle)
      for (;;) {
        const state = yield* host.inspect(declared(definition))
        if (holds(state)) return state
        if (Date.now() >= deadline)
          return yield* new UnitCommandFailed({
            unit: definition.unit,
            command,
            detail: `read back ${state.load_state ?? "?"}/${state.active_state ?? "?"}${state.process?.executable ? ` running ${state.process.executable}` : ""}${state.error ? `: ${state.error}` : ""}`
          })
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 100)))
      }
    })

  const timerActive = (state: UnitState) => state.error === null && state.active_state === "active"

  const ensure = (definition: UnitDefinition) =>
    Effect.gen(function* () {
      const current = yield* host.readFile(definition.unit)
      const currentTimer = definition.timer === undefined ? null : yield* host.readFile(definition.timer.unit)
      const matches =
        current === definition.text && (definition.timer === undefined || currentTimer === definition.timer.text)
      if (!matches) {
        yield* host.install(definition.unit, definition.text)
        if (definition.timer !== undefined) yield* host.install(definition.timer.unit, definition.timer.text)
        yield* host.reload([definition.unit, ...(definition.timer === undefined ? [] : [definition.timer.unit])])
      }
      const change = current === null ? "created" : matches ? "restarted" : "reloaded"
      const name = unitName(definition.unit)
      if (definition.timer !== undefined) {
        const timer = unitName(definition.timer.unit)
        yield* host.control("enable", timer)
        yield* host.control("start", timer)
        const state = yield* postcondition(
          { ...definition, unit: definition.timer.unit },
          timerActive,
          `start ${timer}`
        )
        return { change, unit: definition.unit, state } satisfies EnsureResult
      }
      yield* host.control("enable", name)
      yield* host.control("restart", name)
      const state = yield* postcondition(definition, (s) => running(s, definition), `restart ${name}`)
      return { change, unit: definition.unit, state } satisfies EnsureResult
    })

  const kick = (definition: UnitDefinition) =>
    Effect.gen(function* () {
      const name = unitName(definition.unit)
      const before = yield* host.inspect(declared(definition))
      yield* host.control("restart", name)
      const state = yield* postcondition(
        definition,
        (s) =>
          running(s, definition) &&
          s.main_pid !== before.main_pid &&
          (s.program_sha256 === null || s.process?.sha256 === null || s.process?.sha256 === s.program_sha256),
        `restart ${name}`
      )
      return { change: "kicked", unit: definition.unit, state } satisfies EnsureResult
    })

  const start = (unit: DeclaredUnit) => Effect.zipRight(host.control("start", unitName(unit.unit)), host.inspect(unit))
  const stop = (unit: DeclaredUnit) => Effect.zipRight(host.control("stop", unitName(unit.unit)), host.inspect(unit))

  const reassertTimer = (unit: DeclaredUnit) =>
    Effect.gen(function* () {
      const timer = host.manager === "launchd" ? unit.unit : timerOf(unit.unit)
      yield* host.control("enable", unitName(timer))
      yield* host.control("start", unitName(timer))
      const definition = {
        name: unit.name,
        unit: timer,
        program: "",
        args: [],
        kind: "oneshot-timer",
        text: ""
      } as const
      const state = yield* postcondition(definition, timerActive, `start ${unitName(timer)}`)
      return { change: "reasserted", unit: timer, state } satisfies EnsureResult
    })

  return { manager: host.manager, inspect: host.inspect, ensure, kick, start, stop, reassertTimer }
}
