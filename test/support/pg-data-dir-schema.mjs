// The PostgreSQL schema that stands for a data dir's `keel.db` under `npm run test:pg`: one name for the in-process
// `runCli` (test/support/pg-datadir.ts) and for spawned Keel children (test/support/pg-child.mjs), so both open the
// same database when they share a data dir. Plain JavaScript: the children's preload loads it before anything else.
import { createHash } from "node:crypto"
import * as path from "node:path"
import pg from "pg"

/** `keel_d_<12 hex of sha256(the data dir's absolute path)>`: two data dirs never share one. */
export const dataDirSchema = (dataDir) =>
  `keel_d_${createHash("sha256").update(path.resolve(dataDir)).digest("hex").slice(0, 12)}`

/** `url` with `-c search_path=<schema>` added to its startup options (as src/…/sql/DatabaseUrl.ts withSearchPath). */
export const urlInSchema = (url, schema) => {
  const parsed = new URL(url)
  const options = parsed.searchParams.get("options")
  const own = `-c search_path=${schema}`
  parsed.searchParams.set("options", options === null || options === "" ? own : `${options} ${own}`)
  return parsed.toString()
}

/** One statement on a connection of its own to the test database. */
export const adminStatement = async (url, statement) => {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 })
  await client.connect()
  try {
    await client.query(statement)
  } finally {
    await client.end()
  }
}

/**
 * `CREATE SCHEMA IF NOT EXISTS`, which two processes running it at once can still fail with a unique violation on
 * the catalog (23505) or "already exists" (42P06): either way the schema is there.
 */
export const ensureSchema = async (url, schema) => {
  try {
    await adminStatement(url, `CREATE SCHEMA IF NOT EXISTS ${schema}`)
  } catch (error) {
    if (error?.code !== "23505" && error?.code !== "42P06") throw error
  }
}
