import * as fs from "node:fs"
import * as path from "node:path"
import { Data, Effect } from "effect"

/** The mode of a directory only its owner may enter (the data dir), and of a file only its owner may read. */
export const PRIVATE_DIR_MODE = 0o700
export const PRIVATE_FILE_MODE = 0o600

/** The files SQLite keeps beside a database: they hold its pages, so they are as secret as the file. */
export const SQLITE_COMPANIONS = ["-wal", "-shm", "-journal"] as const

/** A directory or file that could not be created where Keel keeps its state (permissions, a file in the way). */
export class PrivatePathFailed extends Data.TaggedError("PrivatePathFailed")<{
  readonly path: string
  readonly reason: string
}> {}

const create = (target: string, make: () => void) =>
  Effect.try({
    try: make,
    catch: (error) =>
      new PrivatePathFailed({
        path: target,
        reason: error instanceof Error ? error.message : String(error)
      })
  })

const modeOf = (file: string): number | undefined => {
  try {
    return fs.statSync(file).mode & 0o777
  } catch {
    return undefined
  }
}

/**
 * Gives an existing file or directory `wanted` when it lets anyone but its owner in (group or other bits set),
 * with a warning saying what it was: a deployment that made it looser learns that it changed. A mode that cannot
 * be changed (another owner's file) is a warning too, never a failed start.
 */
const tighten = (target: string, what: string, wanted: number) =>
  Effect.gen(function* () {
    const mode = modeOf(target)
    if (mode === undefined || (mode & 0o077) === 0) return
    const failure = yield* Effect.sync(() => {
      try {
        fs.chmodSync(target, wanted)
        return undefined
      } catch (error) {
        return (error as NodeJS.ErrnoException).code ?? String(error)
      }
    })
    yield* Effect.logWarning(
      failure === undefined
        ? `${what} was readable by others; its mode is now ${wanted.toString(8)}`
        : `${what} is readable by others and its mode could not be changed (${failure}); chmod ${wanted.toString(8)} it`
    ).pipe(Effect.annotateLogs({ path: target, mode: mode.toString(8) }))
  })

/**
 * The data dir, owner-only: created 0700 (with any missing parent), and an existing one that group or other may
 * read is tightened to 0700 with a warning. Everything Keel keeps there (the database, the vault key, git mirrors
 * whose registry may carry credentials, objects) is then unreachable to other local users whatever its own mode.
 */
export const ensurePrivateDir = (dir: string, what = "the data dir") =>
  Effect.gen(function* () {
    yield* create(dir, () => fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE }))
    yield* tighten(dir, `${what} ${dir}`, PRIVATE_DIR_MODE)
  })

/**
 * A SQLite database file, owner-only before SQLite opens it: created empty 0600 when missing (SQLite gives its
 * `-wal`, `-shm` and `-journal` the database file's mode, so they are born 0600 too), and an existing database or
 * companion that others may read is tightened to 0600 with a warning. Its directory, when missing, is created 0700.
 */
export const preparePrivateDatabase = (file: string) =>
  Effect.gen(function* () {
    yield* create(file, () => {
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: PRIVATE_DIR_MODE })
      if (!fs.existsSync(file)) fs.closeSync(fs.openSync(file, "a", PRIVATE_FILE_MODE))
    })
    for (const suffix of ["", ...SQLITE_COMPANIONS])
      yield* tighten(`${file}${suffix}`, `the database file ${file}${suffix}`, PRIVATE_FILE_MODE)
  })
