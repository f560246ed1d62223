import { randomBytes } from "node:crypto"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import pg from "pg"

/**
 * PostgreSQL for tests: KEEL_TEST_DATABASE_URL, else this machine's and CI's server (127.0.0.1:5432, trust auth,
 * database `test`). Each test gets a schema of its own (`keel_t_<random>`, dropped with everything in it after),
 * so test files run in parallel on one database.
 */
const explicitUrl = process.env.KEEL_TEST_DATABASE_URL
export const testDatabaseUrl = explicitUrl ?? "postgres://postgres@127.0.0.1:5432/test"

const admin = async (statement: string) => {
  const client = new pg.Client({ connectionString: testDatabaseUrl, connectionTimeoutMillis: 5000 })
  await client.connect()
  try {
    await client.query(statement)
  } finally {
    await client.end()
  }
}

/**
 * Why the PostgreSQL tests of a file are skipped, or undefined when they run. They run whenever
 * KEEL_TEST_DATABASE_URL is set (a server that does not answer then fails them) or the default server answers;
 * without either there is no PostgreSQL to test against — except in CI (`CI` set), which always has one
 * (`.ci/run`): there a missing server fails the file instead of skipping it silently.
 */
export const postgresSkipReason: string | undefined =
  explicitUrl !== undefined
    ? undefined
    : await admin("SELECT 1").then(
        () => undefined,
        (error: unknown) => {
          const reason = `no PostgreSQL: KEEL_TEST_DATABASE_URL is unset and 127.0.0.1:5432 did not answer (${String(error)})`
          if (process.env.CI !== undefined && process.env.CI !== "")
            throw new Error(`CI runs the PostgreSQL tests: ${reason}`)
          return reason
        }
      )

/** `url` whose sessions start with `schema` as their search path (libpq's `options`, which node-postgres sends). */
export const urlInSchema = (url: string, schema: string) => {
  const parsed = new URL(url)
  parsed.searchParams.set("options", `-c search_path=${schema}`)
  return parsed.toString()
}

/** A fresh, empty schema named `<prefix><random>` for the scope; dropped (CASCADE) when the scope closes. */
export const freshSchemaNamed = (prefix: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const schema = `${prefix}${randomBytes(6).toString("hex")}`
      await admin(`CREATE SCHEMA ${schema}`)
      return schema
    }),
    (schema) => Effect.promise(() => admin(`DROP SCHEMA ${schema} CASCADE`))
  )

/** A fresh, empty schema for the scope; dropped (CASCADE) when the scope closes. */
export const freshSchema = freshSchemaNamed("keel_t_")

/** A `PgClient` (and `SqlClient`) whose every connection works in `schema`. */
export const pgClientIn = (schema: string, maxConnections = 4) =>
  PgClient.layer({ url: Redacted.make(urlInSchema(testDatabaseUrl, schema)), maxConnections })

/** A `PgClient` in a fresh schema of its own, dropped when the layer is released. */
export const pgInFreshSchema = Layer.unwrapScoped(Effect.map(freshSchema, (schema) => pgClientIn(schema)))
