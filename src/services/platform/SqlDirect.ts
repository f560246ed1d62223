import { SqlClient } from "@effect/sql"
import type { Connection } from "@effect/sql/SqlConnection"
import type { SqlError } from "@effect/sql/SqlError"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Effect, Exit, Option } from "effect"
import { openHotConnection, type SqlParam, type SyncStatements, syncOn } from "./SyncSql.js"
import { readOnPg, savepointOnPg, transactionOnPg } from "./sql/PgProgram.js"
import {
  driveSync,
  failureOf,
  type Program,
  type Statements,
  savepoint as savepointProgram,
  sqliteStatements
} from "./sql/Program.js"
import { SqlDialect } from "./sql/SqlDialect.js"

export type { SqlParam } from "./SyncSql.js"
export type { Program, Statements } from "./sql/Program.js"
export { savepoint, TransactionLost } from "./sql/Program.js"

/** Written-out SQL on one connection: `?` placeholders, parameters in order. */
export interface DirectStatements {
  readonly all: <Row extends object>(
    text: string,
    params?: ReadonlyArray<SqlParam>
  ) => Effect.Effect<Array<Row>, SqlError>
  readonly run: (text: string, params?: ReadonlyArray<SqlParam>) => Effect.Effect<void, SqlError>
}

const rowLists = new Map<string, string>()

/** `(?, ?), (?, ?)` for `rows` rows of `columns` values: the VALUES list of a multi-row insert. */
export const placeholders = (columns: number, rows: number) => {
  const key = `${columns}x${rows}`
  let text = rowLists.get(key)
  if (text === undefined) {
    const row = `(${Array.from({ length: columns }, () => "?").join(", ")})`
    text = Array.from({ length: rows }, () => row).join(", ")
    if (rowLists.size < 1_000) rowLists.set(key, text)
  }
  return text
}

/** The statements on `conn`, each text in the engine's placeholders (`dialect.text`: as written on SQLite). */
const statementsOn =
  (dialect: SqlDialect["Type"]) =>
  (conn: Connection): DirectStatements => ({
    all: <Row extends object>(text: string, params: ReadonlyArray<SqlParam> = []) =>
      conn.execute(dialect.text(text), params as Array<SqlParam>, undefined) as Effect.Effect<Array<Row>, SqlError>,
    run: (text, params = []) => Effect.asVoid(conn.execute(dialect.text(text), params as Array<SqlParam>, undefined))
  })

/**
 * The hot-path transaction. `sql.withTransaction` and the `sql` template compile, trace and lock every
 * statement (≈ 20 µs each here); the requests that run thousands of times a second (a trade, an
 * assignment, a collector batch) instead take the connection once, write their SQL out with `?`
 * placeholders (≈ 4 µs each; numbered by the dialect on PostgreSQL) and run in one write transaction
 * (`BEGIN IMMEDIATE` on SQLite, so a write never has to upgrade a read lock; `BEGIN` on PostgreSQL). The connection is the SqlClient's own (one connection, one lock, one
 * transaction at a time, as everywhere else), and it is provided as the current transaction
 * connection: `sql` statements and `sql.withTransaction` inside the body join this transaction,
 * and a body run inside an existing transaction becomes a savepoint of that one.
 */
export class SqlDirect extends Effect.Service<SqlDirect>()("platform/SqlDirect", {
  scoped: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const dialect = yield* SqlDialect
    const on = statementsOn(dialect)
    const hot = yield* hotConnectionOf(sql)

    const topLevel = <A, E, R>(body: (db: DirectStatements) => Effect.Effect<A, E, R>) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.scoped(
          Effect.gen(function* () {
            const conn = yield* sql.reserve
            // SQLite takes the write lock first (BEGIN IMMEDIATE); PostgreSQL locks rows as it goes (BEGIN).
            yield* conn.execute(dialect.beginWrite, [], undefined)
            const exit = yield* restore(body(on(conn))).pipe(
              Effect.provideService(SqlClient.TransactionConnection, [conn, 0] as const),
              Effect.exit
            )
            if (Exit.isFailure(exit)) {
              yield* conn.execute("ROLLBACK", [], undefined).pipe(Effect.orDie)
              return yield* exit
            }
            // A commit refused (another process holds the lock past the busy timeout) rolls back too.
            yield* conn
              .execute("COMMIT", [], undefined)
              .pipe(Effect.tapError(() => conn.execute("ROLLBACK", [], undefined).pipe(Effect.ignore)))
            return exit.value
          })
        )
      )

    /**
     * A savepoint written out like the statements (`sql.withTransaction` would compile and trace its
     * three statements: ≈ 50 µs, paid by every trade of a group commit). Any failure or defect of the
     * body rolls back to the savepoint and leaves the enclosing transaction as it was.
     */
    const savepoint = <A, E, R>(
      conn: Connection,
      depth: number,
      body: (db: DirectStatements) => Effect.Effect<A, E, R>
    ) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function* () {
          const name = `keel_direct_${depth + 1}`
          yield* conn.execute(`SAVEPOINT ${name}`, [], undefined)
          const exit = yield* restore(body(on(conn))).pipe(
            Effect.provideService(SqlClient.TransactionConnection, [conn, depth + 1] as const),
            Effect.exit
          )
          if (Exit.isFailure(exit)) yield* conn.execute(`ROLLBACK TO ${name}`, [], undefined).pipe(Effect.orDie)
          yield* conn.execute(`RELEASE ${name}`, [], undefined).pipe(Effect.orDie)
          return yield* exit
        })
      )

    /**
     * Runs `body` in one transaction: all of it commits, or none of it. The body is an effect (which
     * reaches the statements through `current`) or a function given them.
     */
    const transaction = <A, E, R>(
      body: Effect.Effect<A, E, R> | ((db: DirectStatements) => Effect.Effect<A, E, R>)
    ): Effect.Effect<A, E | SqlError, R> => {
      const run = Effect.isEffect(body) ? () => body : body
      return Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (open) =>
        // Nested: a savepoint inside the caller's transaction, so a failed body undoes only itself.
        open._tag === "Some" ? savepoint(open.value[0], open.value[1], run) : topLevel(run)
      )
    }

    /** The statements of the transaction the caller runs in (`transaction` or `sql.withTransaction`). */
    const current = Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (open) =>
      open._tag === "Some"
        ? Effect.succeed(on(open.value[0]))
        : Effect.dieMessage("SqlDirect.current used outside a transaction: the caller must open one")
    )

    /**
     * `run` on the client's connection: the caller's open transaction's (`inTransaction`), or the connection
     * reserved for the duration of `run`.
     */
    const onClient = <A, E>(
      run: (conn: Connection, inTransaction: boolean) => Effect.Effect<A, E>
    ): Effect.Effect<A, E | SqlError> =>
      Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (open) =>
        open._tag === "Some"
          ? run(open.value[0], true)
          : Effect.scoped(Effect.flatMap(sql.reserve, (conn) => run(conn, false)))
      )

    /**
     * Runs the statement program `body` in one transaction: all of it commits, or none of it. `refuse(error)` inside
     * the body rolls it back and fails with `error`; a statement's `SqlError` rolls it back and fails with it;
     * anything else thrown rolls it back and is a defect. Inside a caller's transaction the body is a savepoint of
     * that one. On SQLite the program is driven synchronously: on a database file on the hot connection while this
     * process's client connection is held (nothing else of ours can write meanwhile), in one synchronous step; an
     * in-memory database runs it on the client's connection. On PostgreSQL it is driven asynchronously on one
     * connection in one transaction, run again from its start after a deadlock or serialization failure.
     */
    const transactionProgram = <A, E = never>(body: (db: Statements) => Program<A>): Effect.Effect<A, E | SqlError> =>
      dialect.name === "pg"
        ? onClient((conn, inTransaction) =>
            inTransaction ? savepointOnPg<A, E>(conn, dialect, body) : transactionOnPg<A, E>(conn, dialect, body)
          )
        : onClient((conn, inTransaction) =>
            attempt<A, E>(() =>
              inTransaction
                ? driveSync(syncOn(conn), savepointProgram(sqliteStatements, body(sqliteStatements)))
                : topLevelSync(hot === undefined ? syncOn(conn) : hot.statements, body)
            )
          )

    /**
     * Runs the statement program `body` (reads) on the client's connection: in the caller's transaction when there
     * is one, else holding a connection for its duration. Thrown refusals and errors as `transactionProgram`.
     */
    const readProgram = <A, E = never>(body: (db: Statements) => Program<A>): Effect.Effect<A, E | SqlError> =>
      dialect.name === "pg"
        ? onClient((conn) => readOnPg<A, E>(conn, dialect, body))
        : onClient((conn) => attempt<A, E>(() => driveSync(syncOn(conn), body(sqliteStatements))))

    /**
     * Runs the statement program `body` (reads) against the latest committed state. On SQLite, on the hot
     * connection, which never holds a transaction between steps, so it needs no lock and no transaction another
     * request holds open on the client's connection can hide a commit from it; without one (in memory), on the
     * client's connection under its lock, as `readProgram`. On PostgreSQL, on a connection of its own outside any
     * transaction (READ COMMITTED: each statement sees every commit before it).
     */
    const readLatest = <A, E = never>(body: (db: Statements) => Program<A>): Effect.Effect<A, E | SqlError> =>
      dialect.name === "pg"
        ? Effect.scoped(Effect.flatMap(sql.reserve, (conn) => readOnPg<A, E>(conn, dialect, body)))
        : hot === undefined
          ? readProgram<A, E>(body)
          : Effect.suspend(() => attempt<A, E>(() => driveSync(hot.statements, body(sqliteStatements))))

    return { transaction, current, transactionProgram, readProgram, readLatest } as const
  })
}) {}

/**
 * The hot connection of a SQLite database file (none for an in-memory or read-only database, or another
 * dialect), with the client connection's own settings.
 */
const hotConnectionOf = (sql: SqlClient.SqlClient) =>
  Effect.gen(function* () {
    const sqlite = yield* Effect.serviceOption(SqliteClient.SqliteClient)
    if (Option.isNone(sqlite)) return undefined
    const { filename, readonly } = sqlite.value.config
    if (readonly === true || filename === ":memory:" || filename === "") return undefined
    // Its page cache stays SQLite's default (2 MB): a trade touches a few pages, and in WAL mode each
    // connection's cache is dropped when the other commits, so the client's large one (sized for search
    // indexes) would only be refilled for nothing. Other per-connection setup (functions, extensions) is not
    // copied: the hot paths use none.
    const settings: Record<string, number> = {}
    for (const [name, column] of [
      ["busy_timeout", "timeout"],
      ["synchronous", "synchronous"],
      ["mmap_size", "mmap_size"]
    ] as const) {
      const rows = yield* sql.unsafe<Record<string, number | bigint>>(`PRAGMA ${name}`)
      const value = rows[0]?.[column]
      if (value !== undefined) settings[name] = Number(value)
    }
    return yield* openHotConnection(filename, settings)
  }).pipe(Effect.orDie)

/** A synchronous body's outcome as an effect: `Refused` → its failure, `SqlError` → failure, else a defect. */
const attempt = <A, E>(body: () => A): Effect.Effect<A, E | SqlError> => {
  try {
    return Effect.succeed(body())
  } catch (thrown) {
    return failureOf<E>(thrown)
  }
}

/** BEGIN IMMEDIATE … COMMIT around the program `body`; whatever it throws rolls it back and is thrown on. */
const topLevelSync = <A>(db: SyncStatements, body: (db: Statements) => Program<A>): A => {
  db.run("BEGIN IMMEDIATE")
  let result: A
  try {
    result = driveSync(db, body(sqliteStatements))
    db.run("COMMIT")
  } catch (thrown) {
    // Also a commit refused (another process holds the lock past the busy timeout). An error that made SQLite
    // roll the transaction back itself (a full disk, an I/O error) makes this ROLLBACK fail: what is thrown
    // on is the original error.
    try {
      db.run("ROLLBACK")
    } catch {}
    throw thrown
  }
  return result
}
