import * as fs from "node:fs"
import { carriesCredential, SECRET_ENV, selfEnv } from "./ChildEnv.js"

/**
 * A process's initial environment lives in one block of its own memory, and `/proc/<pid>/environ` shows that
 * block to every process of the same user (and to root) for as long as the process lives: `setenv`, `delete
 * process.env.X` and Node's own bookkeeping never touch it. A job Keel runs is such a process: it could read its
 * worker's block through `/proc/$PPID/environ` and find the vault key there (issue 42).
 *
 * So every `ctl` process, first thing, moves each variable it must not show into the heap (`setenv` copies it:
 * `process.env` still answers it) and overwrites the variable in the block with NUL bytes, through
 * `/proc/self/mem` (a process may always write its own memory). What stays visible is what Keel's own
 * children may see anyway: the allow-list and Keel's non-secret `KEEL_*` settings (`selfEnv`). Linux only; where
 * there is no `/proc` nothing is done and nothing is claimed.
 */

/**
 * The variables a process's environment block may keep: those `selfEnv` would hand to Keel itself, but for a
 * setting whose value holds a credential (a token in `KEEL_REGISTRY`'s URL, the webhook URL).
 */
const keptNames = (env: NodeJS.ProcessEnv) =>
  new Set(
    Object.entries(selfEnv(env))
      .filter(([name, value]) => !carriesCredential(name, value))
      .map(([name]) => name)
  )

/** `NAME=value` entries of a block, with each one's byte offset in it. */
const entriesOf = (block: Buffer) => {
  const entries: Array<{
    readonly name: string
    readonly value: string
    readonly offset: number
    readonly length: number
  }> = []
  let offset = 0
  while (offset < block.length) {
    let end = block.indexOf(0, offset)
    if (end < 0) end = block.length
    if (end > offset) {
      const text = block.subarray(offset, end).toString("utf8")
      const equals = text.indexOf("=")
      entries.push({
        name: equals < 0 ? text : text.slice(0, equals),
        value: equals < 0 ? "" : text.slice(equals + 1),
        offset,
        length: end - offset
      })
    }
    offset = end + 1
  }
  return entries
}

/** Where this process's environment block starts: field 50 (`env_start`) of `/proc/self/stat`. */
const blockStart = () => {
  const stat = fs.readFileSync("/proc/self/stat", "utf8")
  // The command name (field 2) is in parentheses and may hold spaces: fields are counted after its last ')'.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  const start = Number(fields[50 - 3])
  if (!Number.isSafeInteger(start) || start <= 0) throw new Error("no env_start in /proc/self/stat")
  return start
}

export interface EnvironScrub {
  /** Whether this system shows environment blocks at all (`/proc/self/environ` exists). */
  readonly applicable: boolean
  /** Names overwritten in the block (never their values). */
  readonly scrubbed: ReadonlyArray<string>
  /** Why the block could not be overwritten, when it could not. */
  readonly error?: string
}

let outcome: EnvironScrub = { applicable: false, scrubbed: [] }

/**
 * Overwrites every variable of this process's environment block that Keel's children may not see, after
 * copying it into the heap so that this process still reads it. Call once, before any child process exists.
 */
export const scrubEnvironBlock = (env: NodeJS.ProcessEnv = process.env): EnvironScrub => {
  let block: Buffer
  try {
    block = fs.readFileSync("/proc/self/environ")
  } catch {
    outcome = { applicable: false, scrubbed: [] }
    return outcome
  }
  const kept = keptNames(env)
  const doomed = entriesOf(block).filter((entry) => !kept.has(entry.name))
  if (doomed.length === 0) {
    outcome = { applicable: true, scrubbed: [] }
    return outcome
  }
  try {
    // Into the heap first: libc's environ then points at the copies, never again at the block.
    for (const { name } of doomed) {
      const value = env[name]
      if (value !== undefined) env[name] = value
    }
    const start = blockStart()
    const memory = fs.openSync("/proc/self/mem", "r+")
    try {
      for (const entry of doomed)
        if (fs.writeSync(memory, Buffer.alloc(entry.length), 0, entry.length, start + entry.offset) !== entry.length)
          throw new Error(`the environment block took a short write at ${entry.name}`)
    } finally {
      fs.closeSync(memory)
    }
    outcome = { applicable: true, scrubbed: doomed.map((e) => e.name) }
  } catch (error) {
    outcome = {
      applicable: true,
      scrubbed: [],
      error: error instanceof Error ? error.message : String(error)
    }
  }
  return outcome
}

/** What the scrub at start did (for `ctl machine work`, which refuses to run jobs beside an exposed block). */
export const environScrubOutcome = () => outcome

/**
 * The known secrets (SECRET_ENV, the names KEEL_SECRET_ENV lists, a setting whose value carries a credential)
 * this process's environment block still shows: none after a scrub that worked, or when they were never in the environment. Empty where there is no
 * `/proc`. (An embedder that runs jobs in its own process calls `scrubEnvironBlock` first, as `ctl` does.)
 */
export const exposedEnvironNames = (env: NodeJS.ProcessEnv = process.env): ReadonlyArray<string> => {
  let block: Buffer
  try {
    block = fs.readFileSync("/proc/self/environ")
  } catch {
    return []
  }
  const named = (env.KEEL_SECRET_ENV ?? "").split(",").map((n) => n.trim())
  return entriesOf(block)
    .filter(
      ({ name, value }) =>
        SECRET_ENV.includes(name) ||
        (name !== "" && named.includes(name)) ||
        (name.startsWith("KEEL_") && carriesCredential(name, value))
    )
    .map((entry) => entry.name)
}
