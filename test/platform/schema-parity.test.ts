import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { AllMigrations } from "../../src/layers/Migrations.js"
import { migrate } from "../../src/services/platform/Database.js"
import * as SqliteImmediate from "../../src/services/platform/sql/SqliteImmediate.js"
import { freshSchema, pgClientIn, postgresSkipReason } from "../support/pg-schema.js"

/**
 * The two engines' migrations leave the same schema behind (docs/database.md, "Migrations"): a fresh SQLite file
 * and a fresh PostgreSQL schema, both migrated by every domain, compared table by table: the table set, each
 * column's name, nullability and kind (SQLite INTEGER ↔ bigint, BLOB ↔ bytea, TEXT ↔ text), primary
 * keys, which row ids the database assigns (SQLite's INTEGER PRIMARY KEY ↔ an identity), and index names.
 *
 * Skipped only when there is no PostgreSQL: KEEL_TEST_DATABASE_URL unset and nothing answering on
 * 127.0.0.1:5432 (test/support/pg-schema.ts). CI has PostgreSQL, so it runs there.
 */

/** SQLite only: ground truth's FTS5 table and its shadow tables, replaced on PostgreSQL by `gt_chunks.search`. */
const SQLITE_ONLY_TABLES = [
  "gt_chunks_fts",
  "gt_chunks_fts_config",
  "gt_chunks_fts_content",
  "gt_chunks_fts_data",
  "gt_chunks_fts_docsize",
  "gt_chunks_fts_idx"
]
/** PostgreSQL only: FTS5's replacement, a generated tsvector column and its GIN index. */
const PG_ONLY_COLUMNS = [["gt_chunks", "search"]] as const
const PG_ONLY_INDEXES = ["gt_chunks_search"]
/** One-row tables whose id (1) is always written: a plain key on PostgreSQL, not an identity. */
const EXPLICIT_IDS = ["autonomy_pause", "gt_registry", "market_api_key_changes"]
/** @effect/sql's Migrator creates the history tables, with its own columns per engine: not ours to compare. */
const isHistory = (table: string) => table.startsWith("keel_migrations_")

interface TableShape {
  /**
   * `name kind [not null]`, by name: not in column order, which neither engine lets a later migration choose
   * (a column added to an existing table comes last; a table rebuilt by a SQLite migration can reorder).
   */
  columns: Array<string>
  primaryKey: Array<string>
  /** Columns whose value the database assigns when an insert leaves them out. */
  assigned: Array<string>
}
type Shape = { tables: Record<string, TableShape>; indexes: Array<string> }

const sqliteKind = (declared: string) => {
  const type = declared.toUpperCase()
  return type === "INTEGER" || type === "BIGINT"
    ? "integer"
    : type === "TEXT"
      ? "text"
      : type === "BLOB"
        ? "blob"
        : type
}
const pgKind = (type: string) =>
  type === "bigint"
    ? "integer"
    : type === "integer" || type === "smallint"
      ? `${type} (32 bits or fewer)`
      : type === "bytea"
        ? "blob"
        : type

const sqliteShape = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const tables: Record<string, TableShape> = {}
  const names = yield* sql<{ name: string }>`
    SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`
  for (const { name } of names) {
    if (isHistory(name) || SQLITE_ONLY_TABLES.includes(name)) continue
    const info = yield* sql<{ name: string; type: string; notnull: number; pk: number }>`
      SELECT name, type, "notnull", pk FROM pragma_table_info(${name}) ORDER BY cid`
    const keys = info.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk)
    // SQLite lets a non-INTEGER primary key column hold NULL (a historical quirk); PostgreSQL never does, and
    // Keel never writes one: a key column counts as NOT NULL.
    const notNull = (c: (typeof info)[number]) => c.notnull === 1 || c.pk > 0
    const rowidAlias = keys.length === 1 && keys[0]!.type.toUpperCase() === "INTEGER"
    tables[name] = {
      columns: info.map((c) => `${c.name} ${sqliteKind(c.type)}${notNull(c) ? " not null" : ""}`).sort(),
      primaryKey: keys.map((c) => c.name),
      assigned: rowidAlias && !EXPLICIT_IDS.includes(name) ? [keys[0]!.name] : []
    }
  }
  const indexes = yield* sql<{ name: string }>`
    SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_autoindex_%'
      AND tbl_name NOT LIKE 'keel_migrations_%' ORDER BY name`
  return { tables, indexes: indexes.map((i) => i.name) } satisfies Shape
})

const pgShape = (schema: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const columns = yield* sql<{
      table_name: string
      column_name: string
      data_type: string
      is_nullable: string
      is_identity: string
    }>`SELECT table_name, column_name, data_type, is_nullable, is_identity FROM information_schema.columns
      WHERE table_schema = ${schema} ORDER BY table_name, ordinal_position`
    const keys = yield* sql<{ table_name: string; column_name: string }>`
      SELECT tc.table_name, kcu.column_name FROM information_schema.table_constraints tc
      JOIN information_schema.key_column_usage kcu ON kcu.constraint_name = tc.constraint_name
        AND kcu.table_schema = tc.table_schema AND kcu.table_name = tc.table_name
      WHERE tc.constraint_type = 'PRIMARY KEY' AND tc.table_schema = ${schema}
      ORDER BY tc.table_name, kcu.ordinal_position`
    const tables: Record<string, TableShape> = {}
    for (const c of columns) {
      if (isHistory(c.table_name)) continue
      if (PG_ONLY_COLUMNS.some(([table, column]) => table === c.table_name && column === c.column_name)) continue
      tables[c.table_name] ??= { columns: [], primaryKey: [], assigned: [] }
      const table = tables[c.table_name]!
      table.columns.push(`${c.column_name} ${pgKind(c.data_type)}${c.is_nullable === "NO" ? " not null" : ""}`)
      if (c.is_identity === "YES") table.assigned.push(c.column_name)
    }
    for (const table of Object.values(tables)) table.columns.sort()
    for (const k of keys) tables[k.table_name]?.primaryKey.push(k.column_name)
    // Indexes that back a primary key or a UNIQUE constraint are SQLite's `sqlite_autoindex_*`: not compared.
    const indexes = yield* sql<{ name: string }>`
      SELECT i.indexname AS name FROM pg_indexes i
      WHERE i.schemaname = ${schema} AND i.tablename NOT LIKE 'keel_migrations_%' AND NOT EXISTS (
        SELECT 1 FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
        WHERE n.nspname = ${schema} AND c.conname = i.indexname)
      ORDER BY i.indexname`
    return { tables, indexes: indexes.map((i) => i.name).filter((i) => !PG_ONLY_INDEXES.includes(i)) } satisfies Shape
  })

const migratedSqlite = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "keel-parity-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
).pipe(
  Effect.flatMap((dir) =>
    Effect.zipRight(migrate(AllMigrations), sqliteShape).pipe(
      Effect.provide(SqliteImmediate.layer({ filename: path.join(dir, "keel.db") }))
    )
  )
)

const migratedPg = Effect.flatMap(freshSchema, (schema) =>
  Effect.gen(function* () {
    yield* migrate(AllMigrations)
    const shape = yield* pgShape(schema)
    const sql = yield* SqlClient.SqlClient
    const search = yield* sql<{ data_type: string; is_generated: string; gin: boolean }>`
      SELECT c.data_type, c.is_generated, EXISTS (
        SELECT 1 FROM pg_indexes WHERE schemaname = ${schema} AND indexname = 'gt_chunks_search'
          AND indexdef LIKE '%USING gin (search)%') AS gin
      FROM information_schema.columns c
      WHERE c.table_schema = ${schema} AND c.table_name = 'gt_chunks' AND c.column_name = 'search'`
    return { shape, search }
  }).pipe(Effect.provide(pgClientIn(schema)))
)

// Skipped when there is no PostgreSQL to compare with: see the comment at the top of this file.
describe.skipIf(postgresSkipReason !== undefined)("schema parity: SQLite and PostgreSQL", () => {
  it.scoped("every domain's migrations leave the same tables, columns, keys and indexes on both engines", () =>
    Effect.gen(function* () {
      const sqlite = yield* migratedSqlite
      const { shape: pg, search } = yield* migratedPg
      assert.deepStrictEqual(Object.keys(pg.tables).sort(), Object.keys(sqlite.tables).sort(), "table set")
      for (const [name, table] of Object.entries(sqlite.tables))
        assert.deepStrictEqual(pg.tables[name], table, `table ${name} (PostgreSQL, then SQLite)`)
      assert.deepStrictEqual(pg.indexes, sqlite.indexes, "index names")
      // Ground truth's FTS5 table on PostgreSQL: one stored generated tsvector under a GIN index.
      assert.deepStrictEqual(search, [{ data_type: "tsvector", is_generated: "ALWAYS", gin: true }])
    })
  )
})
