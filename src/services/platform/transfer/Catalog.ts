import { SqlClient } from "@effect/sql"
import { Effect, Logger, LogLevel, Option, Stream } from "effect"
import { type DomainMigrations, migrate, sqliteMemory } from "../Database.js"
import type { AppliedMigrations, Column, ColumnType } from "./Format.js"
import { encodeRow } from "./Format.js"

/** One of Keel's tables, as its migrations leave it. */
export interface KeelTable {
  readonly name: string
  /** Its stored columns, in the migrations' order: generated ones (PostgreSQL's search document) are derived. */
  readonly columns: ReadonlyArray<Column>
  readonly primaryKey: ReadonlyArray<string>
  /** The tables its foreign keys reference: imported before it. */
  readonly parents: ReadonlyArray<string>
  /** SQLite: a WITHOUT ROWID table, paged by its key instead of its rowid. */
  readonly withoutRowid: boolean
  /** What a fresh migration writes into it (each row as its JSON line, sorted): usually nothing. */
  readonly seeded: ReadonlyArray<string>
}

/**
 * Keel's tables: what its migrations create, read from an in-memory SQLite database they just migrated (the
 * engines' schemas are the same, test/platform/schema-parity.test.ts). Another table in the database — the actor
 * runtime's, anything an operator added — is not Keel's to carry.
 */
export interface Reference {
  /** Every table after the tables it references (then by name). */
  readonly tables: ReadonlyArray<KeelTable>
  /** Virtual tables (SQLite's full-text index): derived, rebuilt by their domain after an import. */
  readonly derived: ReadonlyArray<string>
}

/** SQLite's integers as `bigint`, every one exact (PostgreSQL's driver reads int8 as text either way). */
const exactIntegers = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.provideService(effect, SqlClient.SafeIntegers, true)

export const quote = (identifier: string) => `"${identifier.replaceAll('"', '""')}"`

/** SQLite's type affinity rules (datatype3.html §3.1), for the declared types Keel's migrations use. */
const columnType = (table: string, column: string, declared: string): ColumnType => {
  const type = declared.toUpperCase()
  if (type.includes("INT")) return "integer"
  if (type.includes("CHAR") || type.includes("CLOB") || type.includes("TEXT")) return "text"
  if (type.includes("BLOB") || type === "") return "bytes"
  if (type.includes("REAL") || type.includes("FLOA") || type.includes("DOUB")) return "real"
  throw new Error(`${table}.${column} is declared ${declared}, a type the export format has no rule for`)
}

/** Every table after the tables it references; otherwise by name, so the order is the same on every run. */
const parentsFirst = (tables: ReadonlyArray<KeelTable>): ReadonlyArray<KeelTable> => {
  const byName = new Map(tables.map((t) => [t.name, t]))
  const ordered: Array<KeelTable> = []
  const state = new Map<string, "visiting" | "placed">()
  const visit = (table: KeelTable) => {
    if (state.get(table.name) === "placed") return
    if (state.get(table.name) === "visiting") throw new Error(`foreign keys form a cycle through ${table.name}`)
    state.set(table.name, "visiting")
    for (const parent of [...table.parents].sort()) {
      const referenced = byName.get(parent)
      if (parent !== table.name && referenced !== undefined) visit(referenced)
    }
    state.set(table.name, "placed")
    ordered.push(table)
  }
  for (const table of [...tables].sort((a, b) => a.name.localeCompare(b.name))) visit(table)
  return ordered
}

const describeTable = (sql: SqlClient.SqlClient, name: string, withoutRowid: boolean) =>
  Effect.gen(function* () {
    const info = yield* sql<{ name: string; type: string; pk: number | bigint; hidden: number | bigint }>`
      SELECT name, type, pk, hidden FROM pragma_table_xinfo(${name}) ORDER BY cid`
    const stored = info.filter((c) => Number(c.hidden) === 0)
    const columns = stored.map((c) => ({ name: c.name, type: columnType(name, c.name, c.type) }))
    const keys = info.filter((c) => Number(c.pk) > 0).sort((a, b) => Number(a.pk) - Number(b.pk))
    const parents = yield* sql<{ table: string }>`SELECT DISTINCT "table" FROM pragma_foreign_key_list(${name})`
    const rows = yield* sql.unsafe<Record<string, unknown>>(`SELECT * FROM ${quote(name)}`)
    const seeded = rows
      .map((row) =>
        JSON.stringify(
          encodeRow(
            columns,
            columns.map((c) => row[c.name])
          )
        )
      )
      .sort()
    return {
      name,
      columns,
      primaryKey: keys.map((c) => c.name),
      parents: parents.map((p) => p.table),
      withoutRowid,
      seeded
    } satisfies KeelTable
  })

/** Migrates an empty in-memory SQLite database with `sets` and reads Keel's tables from it. */
export const referenceSchema = (sets: ReadonlyArray<DomainMigrations>): Effect.Effect<Reference> =>
  Effect.gen(function* () {
    yield* migrate(sets).pipe(Logger.withMinimumLogLevel(LogLevel.Warning))
    const sql = yield* SqlClient.SqlClient
    const list = yield* sql<{ name: string; type: string; wr: number | bigint }>`
      SELECT name, type, wr FROM pragma_table_list WHERE schema = 'main' ORDER BY name`
    const tables: Array<KeelTable> = []
    for (const entry of list) {
      if (entry.type !== "table" || entry.name.startsWith("sqlite_") || isHistory(entry.name)) continue
      tables.push(yield* describeTable(sql, entry.name, Number(entry.wr) === 1))
    }
    return {
      tables: parentsFirst(tables),
      derived: list.filter((entry) => entry.type === "virtual").map((entry) => entry.name)
    }
  }).pipe(exactIntegers, Effect.provide(sqliteMemory), Effect.orDie)

/** @effect/sql's Migrator's history tables, one per domain: the header carries what they say. */
export const isHistory = (table: string) => table.startsWith("keel_migrations_")

/** The tables (SQLite: and virtual tables) of the database, or of the PostgreSQL schema in use. */
export const storedTables = (sql: SqlClient.SqlClient) =>
  sql.onDialectOrElse({
    pg: () =>
      sql<{ name: string }>`SELECT table_name AS name FROM information_schema.tables
        WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`,
    orElse: () =>
      sql<{ name: string }>`SELECT name FROM pragma_table_list
        WHERE schema = 'main' AND type IN ('table', 'virtual') AND substr(name, 1, 7) <> 'sqlite_' ORDER BY name`
  })

/** Each domain's applied migrations, as its history table records them (none when it has no table). */
export const appliedMigrations = (sql: SqlClient.SqlClient, domains: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const applied: Record<string, Array<{ id: number; name: string }>> = {}
    for (const domain of domains) {
      const rows = yield* sql<{ migration_id: number | string | bigint; name: string }>`
        SELECT migration_id, name FROM ${sql(`keel_migrations_${domain}`)} ORDER BY migration_id`.pipe(
        Effect.orElseSucceed(() => [])
      )
      applied[domain] = rows.map((row) => ({ id: Number(row.migration_id), name: row.name }))
    }
    return applied satisfies AppliedMigrations
  })

/**
 * The actor runtime's messages not processed yet, by entity type (none when the runtime never ran here): a
 * workflow in flight, a message waiting for its entity. Its tables are not carried, so this work would be lost.
 */
export const pendingActorWork = (sql: SqlClient.SqlClient) =>
  Effect.gen(function* () {
    const tables = yield* storedTables(sql)
    if (!tables.some((t) => t.name === "cluster_messages")) return []
    const rows = yield* sql<{ entity_type: string; n: number | string | bigint }>`
      SELECT entity_type, count(*) AS n FROM cluster_messages WHERE NOT processed GROUP BY entity_type ORDER BY entity_type`
    return rows.map((row) => ({ entityType: row.entity_type, messages: Number(row.n) }))
  })

export const countRows = (sql: SqlClient.SqlClient, table: string) =>
  Effect.map(sql.unsafe<{ n: number | string | bigint }>(`SELECT count(*) AS n FROM ${quote(table)}`), (rows) =>
    Number(rows[0]?.n ?? 0)
  )

const PAGE = 500

/** SQLite: pages by rowid, or by the key of a WITHOUT ROWID table (no cursor in its driver); integers exact. */
const sqlitePages = (sql: SqlClient.SqlClient, table: KeelTable) => {
  const keys = table.withoutRowid ? table.primaryKey : ["rowid"]
  const keyNames = keys.map((_, i) => `k${i}`)
  const select = `SELECT ${[...keys.map((k, i) => `${quote(k)} AS k${i}`), ...table.columns.map((c) => quote(c.name))].join(", ")} FROM ${quote(table.name)}`
  const after = `(${keys.map(quote).join(", ")}) > (${keys.map(() => "?").join(", ")})`
  const order = `ORDER BY ${keys.map(quote).join(", ")} LIMIT ${PAGE}`
  type Cursor = Option.Option<ReadonlyArray<unknown>>
  return Stream.paginateEffect(Option.none() as Cursor, (cursor: Cursor) =>
    Effect.map(
      Option.match(cursor, {
        onNone: () => sql.unsafe<Record<string, unknown>>(`${select} ${order}`),
        onSome: (last) => sql.unsafe<Record<string, unknown>>(`${select} WHERE ${after} ${order}`, [...last])
      }),
      (rows) => {
        const last = rows.at(-1)
        const next: Option.Option<Cursor> =
          rows.length < PAGE || last === undefined
            ? Option.none()
            : Option.some(Option.some(keyNames.map((k) => last[k])))
        return [rows.map((row) => table.columns.map((c) => row[c.name])), next] as const
      }
    ).pipe(exactIntegers)
  )
}

/** PostgreSQL: one cursor over the table, by its key when it has one. */
const pgPages = (sql: SqlClient.SqlClient, table: KeelTable) => {
  const order = table.primaryKey.length > 0 ? ` ORDER BY ${table.primaryKey.map(quote).join(", ")}` : ""
  const text = `SELECT ${table.columns.map((c) => quote(c.name)).join(", ")} FROM ${quote(table.name)}${order}`
  return sql.unsafe<Record<string, unknown>>(text).stream.pipe(
    Stream.map((row) => table.columns.map((c) => row[c.name])),
    Stream.grouped(PAGE),
    Stream.map((chunk) => Array.from(chunk))
  )
}

/** A table's rows, a page at a time, each row its values in the table's column order, as the driver reads them. */
export const rowPages = (sql: SqlClient.SqlClient, table: KeelTable) =>
  sql.onDialectOrElse({ pg: () => pgPages(sql, table), orElse: () => sqlitePages(sql, table) })

/** PostgreSQL's identity columns of the schema in use (SQLite assigns past the highest rowid by itself). */
export const identityColumns = (sql: SqlClient.SqlClient) =>
  sql.onDialectOrElse({
    pg: () =>
      sql<{ table: string; column: string }>`SELECT table_name AS "table", column_name AS "column"
        FROM information_schema.columns WHERE table_schema = current_schema() AND is_identity = 'YES'
        ORDER BY table_name, column_name`,
    orElse: () => Effect.succeed([] as ReadonlyArray<{ table: string; column: string }>)
  })
