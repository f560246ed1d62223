import * as fs from "node:fs"
import * as path from "node:path"
import Database from "better-sqlite3"
import pg from "pg"
import { numberPlaceholders } from "../../src/services/platform/sql/SqlDialect.js"
import { dataDirSchema, urlInSchema } from "./pg-data-dir-schema.mjs"
import { cliOnPostgres } from "./pg-datadir.js"

type Param = string | number | bigint | null

/** The database of a data dir, opened from outside its Keel processes (`openDataDir`). */
export interface DataDirDatabase {
  /** Rows of one statement (`?` placeholders); integers as `bigint` on both engines. */
  readonly all: <Row extends object>(text: string, params?: ReadonlyArray<Param>) => Promise<Array<Row>>
  /** One statement whose rows are not wanted. */
  readonly run: (text: string, params?: ReadonlyArray<Param>) => Promise<void>
  readonly close: () => Promise<void>
}

const int8AsBigint = ((oid: number, format?: "text" | "binary") =>
  oid === pg.types.builtins.INT8 ? (value: string) => BigInt(value) : pg.types.getTypeParser(oid, format)) as never

/**
 * The database the Keel processes of `dataDir` use, as a test reaches it from outside them: its `keel.db`, or under
 * `npm run test:pg` its PostgreSQL schema (pg-datadir.ts: the one a `ctl` of that data dir opens, in-process or
 * spawned). Integers come back as `bigint` on both engines (safe integers on SQLite; `int8`, what Keel's integer
 * columns are on PostgreSQL, parsed to a bigint), so a test compares the same values either way.
 */
export const openDataDir = async (dataDir: string, options: { readonly readonly?: boolean } = {}) => {
  if (!cliOnPostgres) {
    const db = new Database(path.join(dataDir, "keel.db"), { readonly: options.readonly ?? false })
    db.defaultSafeIntegers(true)
    return {
      all: async <Row extends object>(text: string, params: ReadonlyArray<Param> = []) =>
        db.prepare(text).all(...params) as Array<Row>,
      run: async (text: string, params: ReadonlyArray<Param> = []) => void db.prepare(text).run(...params),
      close: async () => void db.close()
    } satisfies DataDirDatabase
  }
  const client = new pg.Client({
    connectionString: urlInSchema(process.env.KEEL_TEST_DATABASE_URL!, dataDirSchema(dataDir)),
    connectionTimeoutMillis: 10_000,
    types: { getTypeParser: int8AsBigint }
  })
  await client.connect()
  const query = (text: string, params: ReadonlyArray<Param>) =>
    client.query(
      numberPlaceholders(text),
      params.map((p) => (typeof p === "bigint" ? p.toString() : p))
    )
  return {
    all: async <Row extends object>(text: string, params: ReadonlyArray<Param> = []) =>
      (await query(text, params)).rows as Array<Row>,
    run: async (text: string, params: ReadonlyArray<Param> = []) => void (await query(text, params)),
    close: () => client.end()
  } satisfies DataDirDatabase
}

/** Rows of one statement on a data dir's database, read-only (`openDataDir`). */
export const queryDataDir = async <Row extends object>(
  dataDir: string,
  text: string,
  params: ReadonlyArray<Param> = []
): Promise<Array<Row>> => {
  const db = await openDataDir(dataDir, { readonly: true })
  try {
    return await db.all<Row>(text, params)
  } finally {
    await db.close()
  }
}

/**
 * Whether a Keel process of `dataDir` has opened and migrated its database (its platform migrations table holds a
 * row), on either engine: a test waiting for a child to be past its start-up asks this, not whether `keel.db` exists
 * (under test:pg it never does).
 */
export const dataDirMigrated = async (dataDir: string): Promise<boolean> => {
  if (!cliOnPostgres && !fs.existsSync(path.join(dataDir, "keel.db"))) return false
  try {
    const rows = await queryDataDir<{ n: bigint }>(dataDir, "SELECT count(*) AS n FROM keel_migrations_platform")
    return rows.length === 1 && Number(rows[0]!.n) > 0
  } catch {
    return false
  }
}
