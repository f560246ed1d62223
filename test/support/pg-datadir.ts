import { createHash } from "node:crypto"
import pg from "pg"
import { withSearchPath } from "../../src/services/platform/sql/DatabaseUrl.js"

/**
 * Under `npm run test:pg` (KEEL_TEST_DATABASE_URL set), a `ctl` run in-process (`runCli`) opens PostgreSQL instead of
 * `<data dir>/keel.db`: a schema named after the data dir, so the same data dir is the same database across runs of
 * one test, as the same SQLite file is, and two data dirs never share one. Made on first use; dropped (CASCADE)
 * after the test file (test/support/vitest-setup.ts calls `dropDataDirSchemas` after each file). Without KEEL_TEST_DATABASE_URL this does nothing: `ctl` opens the SQLite file.
 */
const url = process.env.KEEL_TEST_DATABASE_URL
const made = new Set<string>()

/**
 * Whether `ctl` runs of this test file open PostgreSQL (test:pg). A test about the SQLite file itself (its journal
 * mode, a damaged file) skips on it, saying so.
 */
export const cliOnPostgres = url !== undefined && url !== ""

const admin = async (statement: string) => {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 })
  await client.connect()
  try {
    await client.query(statement)
  } finally {
    await client.end()
  }
}

/** Drops the schemas this test file's `ctl` runs made (files share a worker's modules: the set outlives a file). */
export const dropDataDirSchemas = async () => {
  for (const schema of made) await admin(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  made.clear()
}

/** The environment a `ctl` run gets: with KEEL_DATABASE_URL added for its data dir under test:pg, else as given. */
export const onTestDatabase = async (env: Record<string, string>): Promise<Record<string, string>> => {
  const dataDir = env.KEEL_DATA_DIR
  if (url === undefined || url === "" || dataDir === undefined || env.KEEL_DATABASE_URL !== undefined) return env
  const schema = `keel_d_${createHash("sha256").update(dataDir).digest("hex").slice(0, 12)}`
  if (!made.has(schema)) {
    await admin(`CREATE SCHEMA IF NOT EXISTS ${schema}`)
    made.add(schema)
  }
  return { ...env, KEEL_DATABASE_URL: withSearchPath(url, schema) }
}
