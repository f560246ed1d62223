import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Config, Effect, Layer } from "effect"
import { UnitCommandFailed, UnitPreflightRejected } from "../../../../contracts/fleet/HostAgent.js"
import { AppConfig } from "../../../platform/AppConfig.js"
import { childEnv } from "../../../platform/ChildEnv.js"
import { sha256Hex } from "../../../platform/Digest.js"
import { packageRoot } from "../../../platform/Package.js"
import {
  type DeclaredUnit,
  emptyUnitState,
  fileSha256,
  liveProcess,
  ServiceManager,
  stagedInstall,
  type UnitHost,
  unitName,
  unitOperations
} from "../../shared/units/ServiceManager.js"
import {
  alive,
  dropInTexts,
  journalFile,
  type LoadedUnit,
  loadedFile,
  type RunRecord,
  readJsonFile,
  runFile,
  unitProgram,
  writeJsonFile
} from "./SupervisorFiles.js"

/**
 * The supervisor process's script: beside this module when built; when this module runs from source (the
 * tests import src/) or from the `ctl` bundle (dist/ctl/), the package's built copy (`npm run build` makes both).
 */
let main: string | undefined
const supervisorMain = (): string => {
  main ??= [
    fileURLToPath(new URL("./SupervisorMain.js", import.meta.url)),
    path.join(packageRoot()?.dir ?? ".", "dist", "src", "services", "fleet", "agent", "units", "SupervisorMain.js")
  ].find((file) => fs.existsSync(file)) as string
  return main
}

const sleep = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

/**
 * Keel's own supervisor, for hosts without a service manager (containers, CI) and for testing the
 * reconciler on real processes: systemd-syntax unit files at their declared paths (`[Service] Type=simple|
 * oneshot`, `ExecStart=`; `[Timer] OnUnitActiveSec=`, `Unit=`), one detached supervisor process per running
 * unit, its state in files under `dir`, every host-changing command appended to `dir/journal.log`. It does not
 * restart a failed unit by itself (the reconciler's ensure does), and a timer's first run is at its start.
 */
export const makeSupervisor = (dir: string): ServiceManager["Type"] => {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 })

  const journal = (command: string) =>
    Effect.sync(() => fs.appendFileSync(journalFile(dir), `${new Date().toISOString()} ${command}\n`))

  const loaded = (unit: string) => readJsonFile<LoadedUnit>(loadedFile(dir, unit))
  const run = (unit: string) => readJsonFile<RunRecord>(runFile(dir, unit))

  /** The run as it stands: a run whose supervisor died with its process is failed, as systemd would say. */
  const current = (unit: string) => {
    const record = run(unit)
    if (record === null) return null
    const live = record.main_pid > 0 ? alive(record.main_pid) : alive(record.supervisor_pid)
    return record.active_state === "active" && !live
      ? { ...record, active_state: "failed" as const, sub_state: "failed", main_pid: 0 }
      : record
  }

  const inspect = (declared: DeclaredUnit) =>
    Effect.gen(function* () {
      const name = unitName(declared.unit)
      const definition = loaded(name)
      // As systemd answers for a unit name: the file the manager loaded it from (its FragmentPath), wherever that is,
      // else the declared path — so a unit the host runs from another path reads back loaded, at that path.
      const fragment = definition?.fragment_path ?? declared.unit
      const text = yield* Effect.sync(() => {
        try {
          return fs.readFileSync(fragment, "utf8")
        } catch {
          return null
        }
      })
      const record = current(name)
      const pid = record?.main_pid ?? 0
      if (text === null && record?.active_state !== "active")
        return { ...emptyUnitState(declared, "supervisor", null), load_state: "not-found", active_state: "inactive" }
      return {
        ...emptyUnitState(declared, "supervisor", null),
        load_state: text === null ? "not-found" : "loaded",
        active_state: record?.active_state ?? "inactive",
        sub_state: record?.sub_state ?? "dead",
        main_pid: pid,
        exec_start: definition === null ? null : definition.exec.join(" "),
        fragment_path: text === null ? null : fragment,
        process: pid > 0 ? yield* liveProcess(pid, declared.program) : null,
        need_daemon_reload: text !== null && definition !== null && sha256Hex(text) !== definition.text_sha256,
        unit_file_state: definition?.enabled ? "enabled" : "disabled",
        invocation_id: record?.invocation_id ?? null,
        program_sha256: declared.program === undefined ? null : yield* fileSha256(declared.program)
      }
    })

  const preflight = (staged: string) =>
    Effect.gen(function* () {
      const text = fs.readFileSync(staged, "utf8")
      const parsed = unitProgram(unitName(staged), text)
      if ("problem" in parsed) return yield* new UnitPreflightRejected({ unit: staged, detail: parsed.problem })
    })

  const failed = (unit: string, command: string, detail: string) => new UnitCommandFailed({ unit, command, detail })

  /** Loads a unit file into the manager (daemon-reload for one unit). */
  const load = (file: string) =>
    Effect.gen(function* () {
      const name = unitName(file)
      const text = yield* Effect.try({
        try: () => fs.readFileSync(file, "utf8"),
        catch: () => failed(file, "daemon-reload", `${file} cannot be read`)
      })
      const parsed = unitProgram(name, text, dropInTexts(file))
      if ("problem" in parsed) return yield* failed(file, "daemon-reload", parsed.problem)
      writeJsonFile(loadedFile(dir, name), {
        ...parsed.ok,
        fragment_path: file,
        text_sha256: sha256Hex(text),
        enabled: loaded(name)?.enabled ?? false
      } satisfies LoadedUnit)
    })

  /** Where a unit's file is: as loaded, or beside a unit of the same directory. */
  const pathOf = (unit: string) => loaded(unit)?.fragment_path

  const start = (unit: string) =>
    Effect.gen(function* () {
      const record = current(unit)
      if (record?.active_state === "active") return
      if (loaded(unit) === null) {
        const file = pathOf(unit)
        if (file === undefined) return yield* failed(unit, `start ${unit}`, `Unit ${unit} not loaded.`)
      }
      const child = spawn(process.execPath, [supervisorMain(), dir, unit], {
        detached: true,
        stdio: "ignore",
        env: childEnv()
      })
      child.unref()
      const startedBy = child.pid ?? 0
      for (let i = 0; i < 50; i++) {
        const now = run(unit)
        if (now !== null && now.supervisor_pid === startedBy && now.active_state !== "activating") return
        if (!alive(startedBy)) break
        yield* sleep(100)
      }
      const now = run(unit)
      if (now === null || now.supervisor_pid !== startedBy)
        return yield* failed(unit, `start ${unit}`, "the supervisor did not record the start")
    })

  const stop = (unit: string) =>
    Effect.gen(function* () {
      const record = run(unit)
      if (record === null || !alive(record.supervisor_pid)) return
      try {
        process.kill(record.supervisor_pid, "SIGTERM")
      } catch {
        return
      }
      for (let i = 0; i < 50 && alive(record.supervisor_pid); i++) yield* sleep(100)
      if (alive(record.supervisor_pid)) return yield* failed(unit, `stop ${unit}`, "the unit did not stop within 5 s")
    })

  const host: UnitHost = {
    manager: "supervisor",
    inspect,
    readFile: (file) =>
      Effect.sync(() => {
        try {
          return fs.readFileSync(file, "utf8")
        } catch {
          return null
        }
      }),
    preflight,
    install: (file, text) => Effect.zipRight(stagedInstall(preflight)(file, text), journal(`install ${file}`)),
    reload: (files) => Effect.zipRight(journal("daemon-reload"), Effect.forEach(files, load, { discard: true })),
    control: (verb, unit) =>
      Effect.gen(function* () {
        yield* journal(`${verb} ${unit}`)
        if (verb === "enable") {
          const definition = loaded(unit)
          if (definition === null) return yield* failed(unit, `enable ${unit}`, `Unit ${unit} not loaded.`)
          return writeJsonFile(loadedFile(dir, unit), { ...definition, enabled: true })
        }
        if (verb === "stop") return yield* stop(unit)
        if (verb === "restart") yield* stop(unit)
        yield* start(unit)
      }),
    settle: "5 seconds"
  }
  return unitOperations(host)
}

/** The supervisor under KEEL_SUPERVISOR_DIR, or `<data dir>/supervisor`. */
export const Supervisor = Layer.effect(
  ServiceManager,
  Effect.gen(function* () {
    const config = yield* AppConfig
    const dir = yield* Config.string("KEEL_SUPERVISOR_DIR").pipe(
      Config.withDefault(path.join(config.dataDir, "supervisor")),
      Effect.orDie
    )
    return makeSupervisor(dir)
  })
)
