import { SqlClient } from "@effect/sql"
import type { Connection } from "@effect/sql/SqlConnection"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Exit } from "effect"

export type SqlParam = string | number | bigint | boolean | null | Uint8Array

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

const on = (conn: Connection): DirectStatements => ({
  all: <Row extends object>(text: string, params: ReadonlyArray<SqlParam> = []) =>
    conn.execute(text, params as Array<SqlParam>, undefined) as Effect.Effect<Array<Row>, SqlError>,
  run: (text, params = []) => Effect.asVoid(conn.execute(text, params as Array<SqlParam>, undefined))
})

/**
 * The hot-path transaction. `sql.withTransaction` and the `sql` template compile, trace and lock every
 * statement (≈ 20 µs each here); the requests that run thousands of times a second (a trade, an
 * assignment, a collector batch) instead take the connection once, write their SQL out with `?`
 * placeholders (≈ 4 µs each) and run in one `BEGIN IMMEDIATE` transaction, so a write never has to
 * upgrade a read lock. The connection is the SqlClient's own (one connection, one lock, one
 * transaction at a time, as everywhere else), and it is provided as the current transaction
 * connection: `sql` statements and `sql.withTransaction` inside the body join this transaction,
 * and a body run inside an existing transaction becomes a savepoint of that one.
 */
export class SqlDirect extends Effect.Service<SqlDirect>()("platform/SqlDirect", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const topLevel = <A, E, R>(body: (db: DirectStatements) => Effect.Effect<A, E, R>) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.scoped(
          Effect.gen(function* () {
            const conn = yield* sql.reserve
            yield* conn.execute("BEGIN IMMEDIATE", [], undefined)
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

    return { transaction, current } as const
  })
}) {}
