import { randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { type Duration, Effect, Layer, Redacted } from "effect"
import { postgres } from "./Database.js"
import { withSearchPath } from "./sql/DatabaseUrl.js"

export interface ScratchSchemaOptions {
  /** The server and database (e.g. KEEL_TEST_DATABASE_URL); the schema is made inside it. */
  readonly url: Redacted.Redacted
  readonly pool?: number
  readonly connectTimeout?: Duration.DurationInput
  /** A name chosen by the caller (to look at it, or to share it with a process); else `keel_t_<random>`. */
  readonly schema?: string
}

/** `sql` once on a connection of its own: creating and dropping a schema must not wait for the pool using it. */
const once = (url: Redacted.Redacted, connectTimeout: Duration.DurationInput, sql: string) =>
  Effect.flatMap(SqlClient.SqlClient, (client) => client.unsafe(sql)).pipe(
    // A statement the server refuses (no CREATE right on the database) is the harness's bug, not a test's failure.
    Effect.catchTag("SqlError", (error) => Effect.die(error)),
    Effect.provide(postgres({ url, pool: 1, connectTimeout }))
  )

/**
 * A PostgreSQL database of its own for a test, as an in-memory SQLite one is: a fresh schema (`CREATE SCHEMA
 * keel_t_<random>`) in the database at `url`, a pool whose every connection has `search_path` set to it (and
 * nothing else, so nothing outside it is seen by an unqualified name), and the schema dropped with everything in
 * it (`CASCADE`) when the layer is released. Many of these live side by side in one database, so test files run in
 * parallel.
 */
export const pgScratchSchema = (options: ScratchSchemaOptions) =>
  Layer.unwrapScoped(
    Effect.gen(function* () {
      const schema = options.schema ?? `keel_t_${randomBytes(6).toString("hex")}`
      const connectTimeout = options.connectTimeout ?? "5 seconds"
      yield* Effect.acquireRelease(once(options.url, connectTimeout, `CREATE SCHEMA ${schema}`), () =>
        // Best effort: a server gone by then leaves the schema for the run's database to take with it.
        Effect.ignore(once(options.url, connectTimeout, `DROP SCHEMA IF EXISTS ${schema} CASCADE`))
      )
      const url = Redacted.make(withSearchPath(Redacted.value(options.url), schema))
      return postgres({ url, pool: options.pool ?? 4, connectTimeout })
    })
  )
