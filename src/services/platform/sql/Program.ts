import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"
import { Refused, type SqlParam, type SyncStatements } from "../SyncSql.js"

/**
 * One statement a program asks its driver to run: written-out SQL with `?` placeholders, parameters in order.
 * `rows` says whether the program wants the rows back (`db.all`) or not (`db.run`).
 */
export interface Statement {
  readonly rows: boolean
  readonly text: string
  readonly params: ReadonlyArray<SqlParam>
}

/**
 * A statement program: a hot-path body (a trade, a ledger post) written once as a generator that `yield*`s its
 * statements and gets their rows back (`const rows = yield* db.all<Row>(text, params)`). It never runs a statement
 * itself, so one body serves two drivers: on SQLite it is driven synchronously on the hot connection (one
 * synchronous step, no effect per statement: `driveSync`); on PostgreSQL, asynchronously on one connection in one
 * transaction (`PgProgram.ts`). `refuse(error)` (a throw) ends it with a typed failure either way.
 */
export type Program<A> = Generator<Statement, A, unknown>

/**
 * A statement as something to `yield*`: it yields itself once, and what the driver sends back (its rows) is the
 * value of the `yield*`. A driver's `throw` (the statement failed) is thrown at the `yield*`, where the body's own
 * `try` (a savepoint) can see it. One object per statement, reusable: the state resets when it completes.
 */
export class Op<R> implements Statement, Iterator<Statement, R, unknown> {
  private asked = false
  constructor(
    readonly rows: boolean,
    readonly text: string,
    readonly params: ReadonlyArray<SqlParam>
  ) {}
  [Symbol.iterator](): Iterator<Statement, R, unknown> {
    return this
  }
  next(...sent: [] | [unknown]): IteratorResult<Statement, R> {
    if (!this.asked) {
      this.asked = true
      return { done: false, value: this }
    }
    this.asked = false
    return { done: true, value: sent[0] as R }
  }
  throw(error?: unknown): IteratorResult<Statement, R> {
    this.asked = false
    throw error
  }
}

/**
 * What a program's statements are made with. `dialect` lets a body choose a text where the engines differ in kind
 * (a row lock PostgreSQL needs and SQLite's single writer makes moot); everything else is written once, in the
 * common subset, with `?` placeholders (the PostgreSQL driver numbers them).
 */
export interface Statements {
  readonly dialect: "sqlite" | "pg"
  readonly all: <Row extends object>(text: string, params?: ReadonlyArray<SqlParam>) => Op<Array<Row>>
  readonly run: (text: string, params?: ReadonlyArray<SqlParam>) => Op<void>
}

const NO_PARAMS: ReadonlyArray<SqlParam> = []

const statementsOf = (dialect: "sqlite" | "pg"): Statements => ({
  dialect,
  all: <Row extends object>(text: string, params = NO_PARAMS) => new Op<Array<Row>>(true, text, params),
  run: (text, params = NO_PARAMS) => new Op<void>(false, text, params)
})

export const sqliteStatements = statementsOf("sqlite")
export const pgStatements = statementsOf("pg")

/** No program runs more statements than this (a trade runs about ten; a group commit of 64 trades, under 1,000). */
export const MAX_STATEMENTS = 1_000_000

export const tooManyStatements = () => new Error(`a statement program ran more than ${MAX_STATEMENTS} statements`)

/**
 * Runs `program` to its end on `db`, synchronously: each statement runs as the program reaches it and its rows are
 * sent back (`it.next(rows)`); a statement that fails is thrown into the program at its `yield*`. Whatever the
 * program throws (a refusal, an error it did not catch) is thrown on.
 */
export const driveSync = <A>(db: SyncStatements, program: Program<A>): A => {
  let step = program.next()
  for (let n = 0; step.done !== true; n++) {
    if (n >= MAX_STATEMENTS) throw tooManyStatements()
    const statement = step.value
    let rows: unknown
    try {
      if (statement.rows) rows = db.all(statement.text, statement.params)
      else db.run(statement.text, statement.params)
    } catch (failed) {
      step = program.throw(failed)
      continue
    }
    step = program.next(rows)
  }
  return step.value
}

/**
 * Thrown out of a savepoint whose rollback failed: the engine has already rolled the whole transaction back (on
 * SQLite a full disk, an I/O error), so nothing after it may run as if inside it. `cause` is what failed in the body.
 */
export class TransactionLost extends Error {
  constructor(override readonly cause: unknown) {
    super("the transaction was rolled back by the database after a failed statement", { cause })
  }
}

const SAVEPOINT = "keel_sync"

/**
 * `body` in a savepoint of the transaction it runs in: whatever it throws rolls back to the savepoint, leaves the
 * enclosing transaction as it was, and is thrown on. (Savepoints nest by name on both engines: `ROLLBACK TO` and
 * `RELEASE` act on the latest one of that name, so one name serves every depth.)
 */
export function* savepoint<A>(db: Statements, body: Program<A>): Program<A> {
  yield* db.run(`SAVEPOINT ${SAVEPOINT}`)
  try {
    const result = yield* body
    yield* db.run(`RELEASE ${SAVEPOINT}`)
    return result
  } catch (thrown) {
    try {
      yield* db.run(`ROLLBACK TO ${SAVEPOINT}`)
      yield* db.run(`RELEASE ${SAVEPOINT}`)
    } catch {
      throw thrown instanceof TransactionLost ? thrown : new TransactionLost(thrown)
    }
    throw thrown
  }
}

/**
 * What a program threw, as an effect's outcome: a refusal (`refuse(error)`) is its typed failure, a statement's
 * `SqlError` a failure, anything else a defect.
 */
export const failureOf = <E>(thrown: unknown): Effect.Effect<never, E | SqlError> => {
  if (thrown instanceof Refused) return Effect.fail(thrown.error as E)
  if (isSqlError(thrown)) return Effect.fail(thrown)
  return Effect.die(thrown)
}

export const isSqlError = (thrown: unknown): thrown is SqlError =>
  typeof thrown === "object" && thrown !== null && (thrown as { _tag?: unknown })._tag === "SqlError"
