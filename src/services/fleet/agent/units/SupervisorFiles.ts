import * as fs from "node:fs"
import * as path from "node:path"
import { parseCommandLine } from "../../shared/units/UnitRender.js"

/**
 * The files Keel's supervisor keeps per unit in its directory: what the manager loaded (written by the
 * adapter on daemon-reload) and what runs (written by the unit's supervisor process). Separate files, one
 * writer each, replaced atomically.
 */
export interface LoadedUnit {
  readonly fragment_path: string
  readonly text_sha256: string
  readonly type: "simple" | "oneshot" | "timer"
  /** ExecStart's words (services); the service a timer runs and its interval (timers). */
  readonly exec: ReadonlyArray<string>
  readonly timer_unit: string | null
  readonly interval_seconds: number | null
  readonly enabled: boolean
  /** `User=`, `Group=`, `WorkingDirectory=`, `Environment=` (services; absent in files loaded before they were read). */
  readonly user?: string | null
  readonly group?: string | null
  readonly working_directory?: string | null
  readonly environment?: Readonly<Record<string, string>>
  /** `EnvironmentFile=`s, read at each start in order; `optional` for a `-` prefix (a missing file is no error). */
  readonly environment_files?: ReadonlyArray<{ readonly path: string; readonly optional: boolean }>
  /** `UMask=` (octal, services): the program's umask; absent means systemd's default, 0022. */
  readonly umask?: number | null
}

/** systemd's `UMask=` default: a unit never inherits the umask of whoever started the manager (`ctl serve`'s is 077). */
export const DEFAULT_UNIT_UMASK = 0o022

export interface RunRecord {
  readonly supervisor_pid: number
  readonly main_pid: number
  readonly invocation_id: string
  readonly active_state: "activating" | "active" | "inactive" | "failed"
  readonly sub_state: string
  readonly exit_code: number | null
  readonly changed_at: string
}

export const loadedFile = (dir: string, unit: string) => path.join(dir, `${unit}.loaded.json`)
export const runFile = (dir: string, unit: string) => path.join(dir, `${unit}.run.json`)
export const logFile = (dir: string, unit: string) => path.join(dir, `${unit}.log`)
export const journalFile = (dir: string) => path.join(dir, "journal.log")

export const readJsonFile = <A>(file: string): A | null => {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8")) as A
  } catch {
    return null
  }
}

export const writeJsonFile = (file: string, value: unknown) => {
  const staged = `${file}.${process.pid}.tmp`
  fs.writeFileSync(staged, `${JSON.stringify(value)}\n`)
  fs.renameSync(staged, file)
}

/**
 * A unit file's `[Section] Key=value` lines (the systemd syntax subset the supervisor runs): the last value of a
 * key wins, except `Environment=` and `EnvironmentFile=`, which accumulate (as systemd's do).
 */
export const parseUnitFile = (text: string, values = new Map<string, string>()) => {
  let section = ""
  for (const raw of text.split("\n")) {
    const line = raw.trim()
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue
    const header = /^\[(.+)\]$/.exec(line)
    if (header !== null) {
      section = header[1]!
      continue
    }
    const eq = line.indexOf("=")
    if (eq <= 0) continue
    const key = `${section}.${line.slice(0, eq).trim()}`
    const value = line.slice(eq + 1).trim()
    const previous = values.get(key)
    values.set(
      key,
      previous === undefined
        ? value
        : key === "Service.Environment"
          ? `${previous} ${value}`
          : key === "Service.EnvironmentFile"
            ? `${previous}\n${value}`
            : value
    )
  }
  return values
}

/** A unit's drop-ins (`<unit file>.d/*.conf`, in name order), as systemd reads them after the unit file. */
export const dropInTexts = (file: string): ReadonlyArray<string> => {
  const dir = `${file}.d`
  try {
    return fs
      .readdirSync(dir)
      .filter((name) => name.endsWith(".conf"))
      .sort()
      .map((name) => fs.readFileSync(path.join(dir, name), "utf8"))
  } catch {
    return []
  }
}

const environmentFilesOf = (value: string | undefined) =>
  (value ?? "")
    .split("\n")
    .filter((file) => file !== "")
    .map((file) => (file.startsWith("-") ? { path: file.slice(1), optional: true } : { path: file, optional: false }))

/** An environment file's `NAME=value` lines (comments and blank lines skipped, one pair of quotes removed). */
export const parseEnvironmentFile = (text: string): Record<string, string> =>
  Object.fromEntries(
    text
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line !== "" && !line.startsWith("#") && !line.startsWith(";") && line.includes("="))
      .map((line) => {
        const name = line.slice(0, line.indexOf("=")).trim()
        const value = line.slice(line.indexOf("=") + 1).trim()
        return [name, /^(["']).*\1$/.test(value) ? value.slice(1, -1) : value] as const
      })
      .filter(([name]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
  )

/** `Environment=` assignments: `A=b "C=d e"` (double quotes group a word, as systemd's). */
const environmentOf = (line: string | undefined) =>
  Object.fromEntries(
    parseCommandLine(line ?? "")
      .map((word) => [word.slice(0, word.indexOf("=")), word.slice(word.indexOf("=") + 1)] as const)
      .filter(([name]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
  )

/** What the supervisor would run from a unit file's text, or why it cannot (its preflight). */
export const unitProgram = (
  unit: string,
  text: string,
  dropIns: ReadonlyArray<string> = []
): { readonly ok: Omit<LoadedUnit, "fragment_path" | "text_sha256" | "enabled"> } | { readonly problem: string } => {
  const values = dropIns.reduce((all, dropIn) => parseUnitFile(dropIn, all), parseUnitFile(text))
  if (unit.endsWith(".timer")) {
    const target = values.get("Timer.Unit") ?? unit.replace(/\.timer$/, ".service")
    const interval = Number(values.get("Timer.OnUnitActiveSec") ?? "")
    if (!Number.isInteger(interval) || interval <= 0)
      return { problem: "[Timer] OnUnitActiveSec must be a whole number of seconds" }
    return { ok: { type: "timer", exec: [], timer_unit: target, interval_seconds: interval } }
  }
  const exec = values.get("Service.ExecStart")
  if (exec === undefined) return { problem: "[Service] has no ExecStart" }
  const words = parseCommandLine(exec)
  const program = words[0]
  if (program === undefined || !path.isAbsolute(program))
    return { problem: "ExecStart must start with an absolute path" }
  try {
    fs.accessSync(program, fs.constants.X_OK)
  } catch {
    return { problem: `${program} is not an executable file` }
  }
  const type = values.get("Service.Type") ?? "simple"
  if (type !== "simple" && type !== "oneshot") return { problem: `Type=${type} is not supported (simple, oneshot)` }
  const directory = values.get("Service.WorkingDirectory") ?? null
  if (directory !== null && !path.isAbsolute(directory)) return { problem: "WorkingDirectory must be an absolute path" }
  const umask = values.get("Service.UMask") ?? null
  if (umask !== null && !/^0?[0-7]{1,3}$/.test(umask)) return { problem: `UMask=${umask} is not an octal mode` }
  return {
    ok: {
      type,
      exec: words,
      timer_unit: null,
      interval_seconds: null,
      user: values.get("Service.User") ?? null,
      group: values.get("Service.Group") ?? null,
      working_directory: directory,
      environment: environmentOf(values.get("Service.Environment")),
      environment_files: environmentFilesOf(values.get("Service.EnvironmentFile")),
      umask: umask === null ? null : Number.parseInt(umask, 8)
    }
  }
}

/** Whether `pid` is a live process (a zombie is not). */
export const alive = (pid: number) => {
  if (pid <= 0) return false
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z"
  } catch {
    return true
  }
}
