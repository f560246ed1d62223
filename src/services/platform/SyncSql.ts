import { SqlClient } from "@effect/sql"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import Sqlite from "better-sqlite3"
import { Cause, Context, Effect, Exit, FiberRefs, Runtime } from "effect"

export type SqlParam = string | number | bigint | boolean | null | Uint8Array

/**
 * Written-out SQL run synchronously: `?` placeholders, parameters in order, integers as bigint. A statement
 * that fails throws a `SqlError`. On SQLite the hot paths' statement programs are driven over these
 * (`sql/Program.ts` `driveSync`), so a whole trade is one synchronous step instead of a chain of effects.
 */
export interface SyncStatements {
  readonly all: <Row extends object>(text: string, params?: ReadonlyArray<SqlParam>) => Array<Row>
  readonly run: (text: string, params?: ReadonlyArray<SqlParam>) => void
}

/**
 * A refusal thrown out of a statement program (an overdraft, a slippage guard): the program's savepoint or
 * transaction is rolled back and `error` becomes the effect's typed failure. Anything else thrown is a defect.
 */
export class Refused<E> {
  constructor(readonly error: E) {}
}

/** Ends a statement program with the typed failure `error`. */
export const refuse = <E>(error: E): never => {
  throw new Refused(error)
}

const sqlError = (cause: unknown, message: string) => new SqlError({ cause, message })

/** Integers as bigint, as `SqlClient.SafeIntegers` gives them to the effect statements. */
const safeIntegers = Runtime.make({
  context: Context.make(SqlClient.SafeIntegers, true),
  fiberRefs: FiberRefs.empty(),
  runtimeFlags: Runtime.defaultRuntimeFlags
})
const runSync = Runtime.runSyncExit(safeIntegers)

/**
 * The statements of a connection of the `SqlClient`, run synchronously: each statement still goes through
 * the client's own prepared-statement cache (≈ 10 µs a statement). Used inside a transaction opened on that
 * connection (`sql.withTransaction`), and for in-memory databases, which have no second connection.
 */
export const syncOn = (conn: Connection): SyncStatements => {
  const execute = (text: string, params: ReadonlyArray<SqlParam>) => {
    const exit = runSync(conn.execute(text, params as Array<SqlParam>, undefined))
    if (Exit.isSuccess(exit)) return exit.value as Array<never>
    throw Cause.squash(exit.cause)
  }
  return { all: (text, params = []) => execute(text, params), run: (text, params = []) => void execute(text, params) }
}

/**
 * A second connection to the database file, for the synchronous hot paths: better-sqlite3's own statements
 * (≈ 1 µs of overhead each). Its transactions run only while their caller holds the `SqlClient`'s one
 * connection (`sql.reserve`), so the two never hold transactions at the same time in this process: the
 * SQLite file still sees one writer at a time from Keel, as before. Being synchronous, a transaction on it is
 * always over before anything else runs, so a plain read on it (`SqlDirect.readLatest`) needs no lock.
 */
export interface HotConnection {
  readonly statements: SyncStatements
}

/** Prepared statements kept per connection; past this many distinct texts the cache starts over. */
const PREPARED_KEPT = 500

/**
 * Opens the hot connection with `settings` (pragmas, read from the client's connection so the two cannot drift).
 * Closed with its scope.
 */
export const openHotConnection = (file: string, settings: Readonly<Record<string, number>>) =>
  Effect.acquireRelease(
    Effect.try({
      try: () => {
        const db = new Sqlite(file)
        db.defaultSafeIntegers(true)
        for (const [name, value] of Object.entries(settings)) db.pragma(`${name} = ${Math.trunc(value)}`)
        return db
      },
      catch: (cause) => sqlError(cause, "could not open the hot connection")
    }),
    (db) => Effect.sync(() => db.close())
  ).pipe(
    Effect.map((db): HotConnection => {
      const prepared = new Map<string, Sqlite.Statement>()
      const statement = (text: string) => {
        let found = prepared.get(text)
        if (found === undefined) {
          if (prepared.size >= PREPARED_KEPT) prepared.clear()
          found = db.prepare(text)
          prepared.set(text, found)
        }
        return found
      }
      const execute = (text: string, params: ReadonlyArray<SqlParam>) => {
        try {
          const found = statement(text)
          if (found.reader) return found.all(...params) as Array<never>
          found.run(...params)
          return []
        } catch (cause) {
          throw sqlError(cause, "Failed to execute statement")
        }
      }
      return {
        statements: {
          all: (text, params = []) => execute(text, params),
          run: (text, params = []) => void execute(text, params)
        }
      }
    })
  )
