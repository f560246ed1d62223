// Under `npm run test:pg` every Node process a test starts loads this first (NODE_OPTIONS `--import`, added by
// test/support/vitest-setup.ts only when KEEL_TEST_DATABASE_URL is set). A Keel child — `bin/ctl.js`, a server —
// with a data dir and no database of its own then opens PostgreSQL instead of `<data dir>/keel.db`: the schema named
// after its data dir, the one an in-process `runCli` on that data dir opens (test/support/pg-data-dir-schema.mjs), so
// a spawned ctl and an in-process one share the database as they would share the SQLite file. Any other child
// (git, a fixture script, a child with KEEL_DATABASE_URL or KEEL_DATABASE_FILE of its own) is left as it was.
// The schema is made here if missing and written to the worker's log (KEEL_TEST_PG_SCHEMA_LOG), whose schemas the
// worker drops after each test file. Plain JavaScript: it runs before anything is compiled.
import { appendFileSync } from "node:fs"
import { dataDirSchema, ensureSchema, urlInSchema } from "./pg-data-dir-schema.mjs"

const env = process.env
const url = env.KEEL_TEST_DATABASE_URL
if (
  url !== undefined &&
  url !== "" &&
  env.KEEL_DATA_DIR !== undefined &&
  env.KEEL_DATA_DIR !== "" &&
  env.KEEL_DATABASE_URL === undefined &&
  env.KEEL_DATABASE_FILE === undefined
) {
  const schema = dataDirSchema(env.KEEL_DATA_DIR)
  await ensureSchema(url, schema)
  if (env.KEEL_TEST_PG_SCHEMA_LOG) appendFileSync(env.KEEL_TEST_PG_SCHEMA_LOG, `${schema}\n`)
  env.KEEL_DATABASE_URL = urlInSchema(url, schema)
}
