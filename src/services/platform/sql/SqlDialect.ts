import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { engineCode, isSqliteBusy, sqliteCode } from "./SqliteCodes.js"

/**
 * What differs between the engines in the SQL Keel writes out by hand (the hot paths' `db.all(text, params)`),
 * and nothing else: everything that can be written in the common subset of SQLite and PostgreSQL is (docs/database.md).
 */
export interface SqlDialectShape {
  readonly name: "sqlite" | "pg"
  /** The statement text for this engine: `?` placeholders become `$1, $2, …` on PostgreSQL (computed once per text). */
  readonly text: (sql: string) => string
  /** How a transaction that will write starts: SQLite takes the write lock first; PostgreSQL locks rows as it goes. */
  readonly beginWrite: string
  /** A failure that goes away when the transaction is tried again (a lock, a snapshot, a serialization failure, a deadlock). */
  readonly retryable: (error: unknown) => boolean
  /** A failure because a unique or primary key already holds the value. */
  readonly uniqueViolation: (error: unknown) => boolean
}

export class SqlDialect extends Context.Tag("platform/SqlDialect")<SqlDialect, SqlDialectShape>() {}

/** The SQLSTATE of a PostgreSQL failure (node-postgres puts it on the error as `code`), when there is one. */
export const pgCode = (error: unknown): string | undefined => engineCode(error, (code) => /^[0-9A-Z]{5}$/.test(code))

/**
 * `?` placeholders numbered for PostgreSQL. A `?` inside a string literal, a quoted identifier or a comment is
 * text, not a placeholder.
 */
export const numberPlaceholders = (sql: string): string => {
  let out = ""
  let n = 0
  let i = 0
  while (i < sql.length) {
    const c = sql[i]!
    if (c === "'" || c === '"') {
      const end = closingQuote(sql, i, c)
      out += sql.slice(i, end)
      i = end
    } else if (c === "-" && sql[i + 1] === "-") {
      const end = sql.indexOf("\n", i)
      const stop = end === -1 ? sql.length : end
      out += sql.slice(i, stop)
      i = stop
    } else if (c === "?") {
      out += `$${++n}`
      i++
    } else {
      out += c
      i++
    }
  }
  return out
}

/** The index just past the literal opened at `start` (a doubled quote is an escaped one). */
const closingQuote = (sql: string, start: number, quote: string) => {
  let i = start + 1
  while (i < sql.length) {
    if (sql[i] === quote) {
      if (sql[i + 1] === quote) i += 2
      else return i + 1
    } else i++
  }
  return sql.length
}

const cachedText = (convert: (sql: string) => string) => {
  const cache = new Map<string, string>()
  return (sql: string) => {
    let text = cache.get(sql)
    if (text === undefined) {
      text = convert(sql)
      // The texts are the program's own constants: the cache stays small. A bound guards against a caller that
      // builds texts from data (a list of placeholders of varying length).
      if (cache.size > 4096) cache.clear()
      cache.set(sql, text)
    }
    return text
  }
}

export const sqlite: SqlDialectShape = {
  name: "sqlite",
  text: (sql) => sql,
  beginWrite: "BEGIN IMMEDIATE",
  retryable: isSqliteBusy,
  uniqueViolation: (error) => {
    const code = sqliteCode(error)
    return code === "SQLITE_CONSTRAINT_PRIMARYKEY" || code === "SQLITE_CONSTRAINT_UNIQUE"
  }
}

/** 40001 serialization failure, 40P01 deadlock, 55P03 lock not available: try again. 23505: unique violation. */
export const pg: SqlDialectShape = {
  name: "pg",
  text: cachedText(numberPlaceholders),
  beginWrite: "BEGIN",
  retryable: (error) => {
    const code = pgCode(error)
    return code === "40001" || code === "40P01" || code === "55P03"
  },
  uniqueViolation: (error) => pgCode(error) === "23505"
}

/**
 * The dialect of `client`: what a repository that holds the client (and not the port) branches on, so that its
 * one clause that differs (a row lock SQLite has no syntax for) can never disagree with the engine it runs on.
 */
export const dialectOf = (client: SqlClient.SqlClient): SqlDialectShape =>
  client.onDialectOrElse({ pg: () => pg, orElse: () => sqlite })

/** The dialect of the `SqlClient` in context: provided beside it, never chosen separately. */
export const layerFromClient = Layer.effect(SqlDialect, Effect.map(SqlClient.SqlClient, dialectOf))
