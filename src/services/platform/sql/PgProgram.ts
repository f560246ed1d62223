import type { Connection } from "@effect/sql/SqlConnection"
import type { SqlError } from "@effect/sql/SqlError"
import { Cause, Effect, Exit } from "effect"
import {
  failureOf,
  isSqlError,
  MAX_STATEMENTS,
  type Program,
  pgStatements,
  type Statement,
  type Statements,
  savepoint,
  tooManyStatements
} from "./Program.js"
import type { SqlDialectShape } from "./SqlDialect.js"

/** node-postgres's type ids: int8, int2, int4 (read as bigint, as SQLite's hot connection reads every integer). */
const INTEGER_TYPES = new Set([20, 21, 23])
/** numeric: what `sum()` of a bigint gives on PostgreSQL (SQLite gives an integer). */
const NUMERIC = 1700

interface PgResult {
  readonly rows?: Array<Record<string, unknown>>
  readonly fields?: ReadonlyArray<{ readonly name: string; readonly dataTypeID: number }>
}

const integer = (value: unknown) => (typeof value === "bigint" ? value : BigInt(value as string | number))
const numeric = (value: unknown) =>
  typeof value === "string" && /^-?\d+$/.test(value) ? BigInt(value) : typeof value === "bigint" ? value : Number(value)

/**
 * A result's rows with integers as bigint, whatever the pool's type parsers made of them (node-postgres answers
 * int8 and numeric as text by default): the bodies read the same types on both engines and never branch on them.
 */
export const rowsOf = (result: unknown): Array<Record<string, unknown>> => {
  const { rows = [], fields = [] } = result as PgResult
  const converted = fields.flatMap((field) =>
    INTEGER_TYPES.has(field.dataTypeID)
      ? [[field.name, integer] as const]
      : field.dataTypeID === NUMERIC
        ? [[field.name, numeric] as const]
        : []
  )
  if (converted.length === 0) return rows
  for (const row of rows)
    for (const [name, convert] of converted) {
      const value = row[name]
      if (value !== null && value !== undefined) row[name] = convert(value)
    }
  return rows
}

type Step<A> = IteratorResult<Statement, A> | { readonly thrown: unknown }

/** The program's next step, or what it threw. */
const resume = <A>(program: Program<A>, failed: boolean, value: unknown): Step<A> => {
  try {
    return failed ? program.throw(value) : program.next(value)
  } catch (thrown) {
    return { thrown }
  }
}

/**
 * Runs `program` to its end on `conn`, one statement at a time (placeholders numbered by the dialect, rows sent back
 * with integers as bigint); a failed statement is thrown into the program at its `yield*`, as on SQLite. With
 * `abortOnRetryable`, a failure the dialect calls retryable (a deadlock, a serialization failure) instead ends the
 * program at once, so the caller can roll the whole transaction back and run it again: a savepoint inside the
 * program (a group commit's order) must not turn it into that one order's defect.
 */
export const drivePg = <A, E>(
  conn: Connection,
  dialect: SqlDialectShape,
  program: Program<A>,
  abortOnRetryable: boolean
): Effect.Effect<A, E | SqlError> =>
  Effect.gen(function* () {
    let step = resume(program, false, undefined)
    for (let n = 0; n <= MAX_STATEMENTS; n++) {
      if ("thrown" in step) return yield* failureOf<E>(step.thrown)
      if (step.done === true) return step.value
      const statement = step.value
      const exit = yield* Effect.exit(conn.executeRaw(dialect.text(statement.text), statement.params))
      if (Exit.isSuccess(exit)) {
        step = resume(program, false, statement.rows ? rowsOf(exit.value) : undefined)
        continue
      }
      const error = Cause.squash(exit.cause)
      if (abortOnRetryable && dialect.retryable(error)) return yield* Effect.failCause(exit.cause)
      step = resume(program, true, error)
    }
    return yield* Effect.die(tooManyStatements())
  })

/** Tries of a transaction that failed retryably (deadlock, serialization failure) before its failure stands. */
const TRIES = 5

/**
 * `body` in one transaction of its own on `conn` (`BEGIN` … `COMMIT`): any failure or defect rolls it back. A
 * retryable failure (a deadlock between two trades, a serialization failure) rolls back and runs the body again from
 * its start, up to `TRIES` times. Uninterruptible: the connection goes back to the pool outside any transaction.
 */
export const transactionOnPg = <A, E>(
  conn: Connection,
  dialect: SqlDialectShape,
  body: (db: Statements) => Program<A>
): Effect.Effect<A, E | SqlError> => {
  const once = Effect.gen(function* () {
    yield* conn.executeRaw(dialect.beginWrite, [])
    const exit = yield* Effect.exit(drivePg<A, E>(conn, dialect, body(pgStatements), true))
    if (Exit.isFailure(exit)) {
      yield* conn.executeRaw("ROLLBACK", []).pipe(Effect.orDie)
      return yield* exit
    }
    yield* conn
      .executeRaw("COMMIT", [])
      .pipe(Effect.tapError(() => conn.executeRaw("ROLLBACK", []).pipe(Effect.ignore)))
    return exit.value
  })
  return once.pipe(
    Effect.retry({ times: TRIES - 1, while: (error) => isSqlError(error) && dialect.retryable(error) }),
    Effect.uninterruptible
  )
}

/** `body` as a savepoint of the transaction `conn` is in (the caller's): a failure undoes only the body. */
export const savepointOnPg = <A, E>(
  conn: Connection,
  dialect: SqlDialectShape,
  body: (db: Statements) => Program<A>
): Effect.Effect<A, E | SqlError> =>
  Effect.uninterruptible(drivePg<A, E>(conn, dialect, savepoint(pgStatements, body(pgStatements)), false))

/** `body` (reads) on `conn`, in whatever transaction it is in. */
export const readOnPg = <A, E>(
  conn: Connection,
  dialect: SqlDialectShape,
  body: (db: Statements) => Program<A>
): Effect.Effect<A, E | SqlError> => drivePg<A, E>(conn, dialect, body(pgStatements), false)
