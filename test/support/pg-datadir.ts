import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { scrubEnvironBlock } from "../../src/services/platform/EnvironBlock.js"
import { adminStatement, dataDirSchema, ensureSchema, urlInSchema } from "./pg-data-dir-schema.mjs"

/**
 * Under `npm run test:pg` (KEEL_TEST_DATABASE_URL set), `ctl` opens PostgreSQL instead of `<data dir>/keel.db`,
 * whether it runs in-process (`runCli`, through `onTestDatabase`) or as a child process (`bin/ctl.js`, a server:
 * through the preload `childrenOnTestDatabase` puts in NODE_OPTIONS): a schema named after the data dir
 * (pg-data-dir-schema.mjs), so the same data dir is the same database across runs and processes of one test, as
 * the same SQLite file is, and two data dirs never share one. Made on first use; dropped (CASCADE) after the test
 * file (test/support/vitest-setup.ts calls `dropDataDirSchemas`). Without KEEL_TEST_DATABASE_URL this does nothing:
 * `ctl` opens the SQLite file.
 */
const url = process.env.KEEL_TEST_DATABASE_URL
const made = new Set<string>()

/**
 * Whether `ctl` runs of this test file open PostgreSQL (test:pg). A test about the SQLite file itself (its journal
 * mode, a damaged file) skips on it, saying so.
 */
export const cliOnPostgres = url !== undefined && url !== ""

/** Where this worker's children write the schemas they made (one name a line). */
const childSchemaLog = () => process.env.KEEL_TEST_PG_SCHEMA_LOG

/**
 * Puts this worker's Node children on the test database (test:pg only): NODE_OPTIONS preloads pg-child.mjs, which
 * points a Keel child with a data dir at its data dir's schema, and KEEL_TEST_PG_SCHEMA_LOG names the file where it
 * notes the schema for `dropDataDirSchemas`. Idempotent (the setup file runs before every test file of a worker).
 */
export const childrenOnTestDatabase = () => {
  if (!cliOnPostgres) return
  // This worker's initial environment block shows KEEL_TEST_DATABASE_URL, a KEEL_* setting whose URL names a user:
  // a credential by Keel's rule (ChildEnv.ts carriesCredential), so a JobWorker run in this process would refuse to
  // run jobs beside it (WORKER_ENVIRONMENT_EXPOSED), as it must. The worker scrubs its block as every ctl process
  // does first (process.env still answers every variable; idempotent).
  scrubEnvironBlock()
  const preload = `--import=${pathToFileURL(fileURLToPath(new URL("./pg-child.mjs", import.meta.url))).href}`
  const options = process.env.NODE_OPTIONS ?? ""
  if (!options.split(" ").includes(preload))
    process.env.NODE_OPTIONS = options === "" ? preload : `${options} ${preload}`
  if (childSchemaLog() === undefined) {
    const log = path.join(os.tmpdir(), `keel-pg-schemas-${process.pid}.log`)
    fs.writeFileSync(log, "")
    process.env.KEEL_TEST_PG_SCHEMA_LOG = log
    process.once("exit", () => fs.rmSync(log, { force: true }))
  }
}

/**
 * What a Keel process a test reaches some other way than as its own child (through sshd, whose sessions start from
 * sshd's environment, not the test's) needs in its environment to open the test database as the test's children do
 * (`childrenOnTestDatabase`): nothing outside test:pg.
 */
export const testDatabaseEnv = (): Record<string, string> => {
  if (!cliOnPostgres) return {}
  const env: Record<string, string> = {}
  for (const name of ["NODE_OPTIONS", "KEEL_TEST_DATABASE_URL", "KEEL_TEST_PG_SCHEMA_LOG"]) {
    const value = process.env[name]
    if (value !== undefined) env[name] = value
  }
  return env
}

/** Drops the schemas this test file's `ctl` runs and children made (files share a worker's modules and log). */
export const dropDataDirSchemas = async () => {
  if (url === undefined) return
  const log = childSchemaLog()
  const logged = log === undefined || !fs.existsSync(log) ? [] : fs.readFileSync(log, "utf8").split("\n")
  for (const schema of new Set([...made, ...logged.filter((line) => line !== "")]))
    await adminStatement(url, `DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  made.clear()
  if (log !== undefined) fs.writeFileSync(log, "")
}

/** The environment a `ctl` run gets: with KEEL_DATABASE_URL added for its data dir under test:pg, else as given. */
export const onTestDatabase = async (env: Record<string, string>): Promise<Record<string, string>> => {
  const dataDir = env.KEEL_DATA_DIR
  if (
    url === undefined ||
    url === "" ||
    dataDir === undefined ||
    dataDir === "" ||
    env.KEEL_DATABASE_URL !== undefined ||
    env.KEEL_DATABASE_FILE !== undefined
  )
    return env
  const schema = dataDirSchema(dataDir)
  if (!made.has(schema)) {
    await ensureSchema(url, schema)
    made.add(schema)
  }
  return { ...env, KEEL_DATABASE_URL: urlInSchema(url, schema) }
}
