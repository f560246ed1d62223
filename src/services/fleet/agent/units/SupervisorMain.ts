import { spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import {
  DEFAULT_UNIT_UMASK,
  type LoadedUnit,
  loadedFile,
  logFile,
  parseEnvironmentFile,
  type RunRecord,
  readJsonFile,
  runFile,
  writeJsonFile
} from "./SupervisorFiles.js"

/**
 * One unit's supervisor process (started detached by the supervisor adapter): it runs the loaded ExecStart,
 * records the run (active while it lives; inactive on a clean exit, failed otherwise) and stops it on
 * SIGTERM. For a timer it runs the timer's service every interval and records that service's runs.
 *
 * argv: <supervisor dir> <unit name>
 */
const [dir, unit] = process.argv.slice(2)
if (dir === undefined || unit === undefined) {
  process.stderr.write("usage: SupervisorMain <dir> <unit>\n")
  process.exit(2)
}

const record = (name: string, run: Omit<RunRecord, "changed_at">) =>
  writeJsonFile(runFile(dir, name), { ...run, changed_at: new Date().toISOString() })

const loaded = readJsonFile<LoadedUnit>(loadedFile(dir, unit))
if (loaded === null) {
  process.stderr.write(`${unit} is not loaded\n`)
  process.exit(1)
}

let stopping = false
let current: ReturnType<typeof spawn> | undefined

/** `/etc/passwd` and `/etc/group` rows by name (the supervisor runs on Linux hosts without a service manager). */
const databaseRow = (file: string, name: string) => {
  try {
    return fs
      .readFileSync(file, "utf8")
      .split("\n")
      .map((line) => line.split(":"))
      .find((fields) => fields[0] === name)
  } catch {
    return undefined
  }
}

/**
 * How a service runs: as `User=` (its uid, primary group or `Group=`, HOME, USER, LOGNAME and SHELL from the
 * account database, as systemd sets them), in `WorkingDirectory=` (default /), with `Environment=` added.
 */
const processOptions = (unitDefinition: LoadedUnit) => {
  const account = unitDefinition.user ? databaseRow("/etc/passwd", unitDefinition.user) : undefined
  if (unitDefinition.user && account === undefined) throw new Error(`User=${unitDefinition.user} does not exist`)
  const group = unitDefinition.group ? databaseRow("/etc/group", unitDefinition.group) : undefined
  if (unitDefinition.group && group === undefined) throw new Error(`Group=${unitDefinition.group} does not exist`)
  const identity =
    account === undefined
      ? {}
      : {
          uid: Number(account[2]),
          gid: Number(group?.[2] ?? account[3]),
          env: { HOME: account[5] ?? "/", USER: account[0]!, LOGNAME: account[0]!, SHELL: account[6] ?? "/bin/sh" }
        }
  let fromFile: Record<string, string> = {}
  for (const file of unitDefinition.environment_files ?? []) {
    try {
      fromFile = { ...fromFile, ...parseEnvironmentFile(fs.readFileSync(file.path, "utf8")) }
    } catch (error) {
      if (!file.optional) throw new Error(`EnvironmentFile=${file.path}: ${(error as Error).message}`)
    }
  }
  return {
    cwd: unitDefinition.working_directory ?? "/",
    ...("uid" in identity ? { uid: identity.uid, gid: identity.gid } : {}),
    // As systemd: the file's settings override Environment='s.
    env: { ...process.env, ...identity.env, ...unitDefinition.environment, ...fromFile }
  }
}

/** Runs one service's command, recording it under `name`; resolves with its exit code. */
const runService = (name: string, unitDefinition: LoadedUnit, supervisor: number) =>
  new Promise<number>((resolve) => {
    const exec = unitDefinition.exec
    const log = fs.openSync(logFile(dir, name), "a")
    const invocation = randomUUID().replace(/-/g, "")
    let options: ReturnType<typeof processOptions>
    try {
      options = processOptions(unitDefinition)
    } catch (error) {
      fs.writeSync(log, `${(error as Error).message}\n`)
      fs.closeSync(log)
      record(name, {
        supervisor_pid: supervisor,
        invocation_id: invocation,
        main_pid: 0,
        active_state: "failed",
        sub_state: "failed",
        exit_code: 217
      })
      return resolve(217)
    }
    // spawn has no umask option and a child inherits its parent's: this process runs one unit, so its own umask
    // is set to the unit's (systemd's 0022 unless UMask= says otherwise), never the starter's.
    process.umask(unitDefinition.umask ?? DEFAULT_UNIT_UMASK)
    const child = spawn(exec[0]!, exec.slice(1), { stdio: ["ignore", log, log], ...options })
    fs.closeSync(log)
    current = child
    const base = { supervisor_pid: supervisor, invocation_id: invocation }
    record(name, { ...base, main_pid: child.pid ?? 0, active_state: "active", sub_state: "running", exit_code: null })
    const stop = () => child.kill("SIGTERM")
    process.on("SIGTERM", stop)
    child.on("error", () => {
      record(name, { ...base, main_pid: 0, active_state: "failed", sub_state: "failed", exit_code: 127 })
      resolve(127)
    })
    child.on("exit", (code, signal) => {
      process.off("SIGTERM", stop)
      const clean = code === 0 || (stopping && signal === "SIGTERM")
      record(name, {
        ...base,
        main_pid: 0,
        active_state: clean ? "inactive" : "failed",
        sub_state: clean ? "dead" : "failed",
        exit_code: code ?? 128
      })
      resolve(code ?? 128)
    })
  })

process.on("SIGTERM", () => {
  stopping = true
})

if (loaded.type === "timer") {
  const target = loaded.timer_unit ?? ""
  const service = readJsonFile<LoadedUnit>(loadedFile(dir, target))
  const invocation = randomUUID().replace(/-/g, "")
  const waiting = () =>
    record(unit, {
      supervisor_pid: process.pid,
      main_pid: 0,
      invocation_id: invocation,
      active_state: "active",
      sub_state: "waiting",
      exit_code: null
    })
  waiting()
  const tick = async () => {
    if (stopping) return
    if (service !== null) await runService(target, service, process.pid)
    if (!stopping) setTimeout(tick, (loaded.interval_seconds ?? 3600) * 1000)
  }
  process.on("SIGTERM", () => {
    current?.kill("SIGTERM")
    record(unit, {
      supervisor_pid: process.pid,
      main_pid: 0,
      invocation_id: invocation,
      active_state: "inactive",
      sub_state: "dead",
      exit_code: 0
    })
    process.exit(0)
  })
  void tick()
} else {
  void runService(unit, loaded, process.pid).then((code) => process.exit(stopping ? 0 : code === 0 ? 0 : 1))
}
