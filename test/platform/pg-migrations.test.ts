import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Scope } from "effect"
import pg from "pg"
import { AllMigrations } from "../../src/layers/Migrations.js"
import { migrate } from "../../src/services/platform/Database.js"
import { portable, withPostgres } from "../../src/services/platform/migrations/byDialect.js"
import { MIGRATION_LOCK } from "../../src/services/platform/migrations/lock.js"
import { freshSchema, pgClientIn, postgresSkipReason, testDatabaseUrl, urlInSchema } from "../support/pg-schema.js"

/**
 * Keel's migrations on PostgreSQL: processes that start together serialize on the migration lock, and every
 * integer column holds what SQLite's 64-bit integers hold. Skipped only when there is no PostgreSQL
 * (KEEL_TEST_DATABASE_URL unset and nothing answering on 127.0.0.1:5432: test/support/pg-schema.ts).
 */

const allIds = AllMigrations.flatMap((set) => Object.keys(set.migrations).map((id) => `${set.domain}/${id}`)).sort()

/** A millisecond timestamp (2025-11-28) and a balance of a million coins in nano-units. */
const WIDE = [1764320000000, 1e15]
/** One-row tables: their id is 1, by a CHECK. */
const SINGLETONS = ["gt_registry", "market_api_key_changes"]

interface Column {
  readonly table_name: string
  readonly column_name: string
  readonly data_type: string
  readonly is_generated: string
}

/** One row in every table with `value` in every integer column (every other column given a value of its type). */
const insertEverywhere = (columns: ReadonlyArray<Column>, value: number, round: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // Alphabetical order puts ledger_entries before ledger_legs, whose entry_id refers to it.
    const tables = [...new Set(columns.map((c) => c.table_name))].sort()
    for (const table of tables) {
      const row: Record<string, unknown> = {}
      for (const c of columns.filter((c) => c.table_name === table && c.is_generated !== "ALWAYS"))
        row[c.column_name] =
          c.data_type === "bigint"
            ? SINGLETONS.includes(table) && c.column_name === "id"
              ? 1
              : value
            : c.data_type === "bytea"
              ? new Uint8Array([round])
              : `r${round}`
      if (SINGLETONS.includes(table)) yield* sql`DELETE FROM ${sql(table)}`
      yield* sql`INSERT INTO ${sql(table)} ${sql.insert(row)}`
    }
  })

/** What a column holds after both rounds: both values; a one-row table keeps the last round's, under id 1. */
const expectedIn = (c: Column) =>
  SINGLETONS.includes(c.table_name)
    ? [c.column_name === "id" ? "1" : String(WIDE[WIDE.length - 1])]
    : WIDE.map(String).sort()

/** Another process's session holding `schema`'s migration lock in an open transaction until the scope closes. */
const lockHolder = (schema: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new pg.Client({ connectionString: urlInSchema(testDatabaseUrl, schema) })
      await client.connect()
      await client.query("BEGIN")
      await client.query(`SELECT ${MIGRATION_LOCK}`)
      return client
    }),
    (client) => Effect.promise(() => client.query("COMMIT").then(() => client.end()))
  )

/** Waits until a session waits for `schema`'s migration lock (bounded: 600 looks, 50 ms apart). */
const someoneWaitsForTheLockOf = (schema: string) =>
  Effect.acquireUseRelease(
    Effect.promise(async () => {
      const admin = new pg.Client({ connectionString: testDatabaseUrl })
      await admin.connect()
      return admin
    }),
    (admin) =>
      Effect.gen(function* () {
        for (let look = 0; look < 600; look++) {
          const { rows } = yield* Effect.promise(() =>
            admin.query(
              `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
                AND classid = 1262830924 AND objid = hashtext($1)::oid AND objsubid = 2`,
              [schema]
            )
          )
          if (rows[0].n > 0) return
          yield* Effect.sleep("50 millis")
        }
        return yield* Effect.dieMessage(`no session ever waited for the migration lock of ${schema}`)
      }),
    (admin) => Effect.promise(() => admin.end())
  )

describe.skipIf(postgresSkipReason !== undefined)("migrations on PostgreSQL", () => {
  it.scoped("three processes migrating one fresh schema at once all succeed, and each migration runs once", () =>
    Effect.gen(function* () {
      const schema = yield* freshSchema
      // Three pools are three sets of sessions, as three processes would hold.
      const runs = yield* Effect.all(
        [1, 2, 3].map(() => migrate(AllMigrations).pipe(Effect.provide(pgClientIn(schema, 2)))),
        { concurrency: "unbounded" }
      )
      const applied = runs.flat().map((m) => `${m.domain}/${String(m.id).padStart(4, "0")}_${m.name}`)
      assert.deepStrictEqual(applied.sort(), allIds, "every migration applied once, by one of the three")
      const again = yield* migrate(AllMigrations).pipe(Effect.provide(pgClientIn(schema, 1)))
      assert.deepStrictEqual(again, [], "nothing pending afterwards")
    })
  )

  // Live clock: the wait for the waiter sleeps between looks.
  it.scopedLive("a held migration lock makes a migration of its schema wait, and leaves other schemas alone", () =>
    Effect.gen(function* () {
      const held = yield* freshSchema
      const other = yield* freshSchema
      const holder = yield* Scope.make()
      yield* Scope.extend(lockHolder(held), holder)
      const elsewhere = yield* migrate(AllMigrations).pipe(Effect.provide(pgClientIn(other, 1)))
      assert.strictEqual(elsewhere.length, allIds.length, "another schema migrates while the lock is held")
      const waiting = yield* Effect.fork(migrate(AllMigrations).pipe(Effect.provide(pgClientIn(held, 1))))
      yield* someoneWaitsForTheLockOf(held)
      yield* Scope.close(holder, Exit.void)
      const applied = yield* Fiber.join(waiting)
      assert.strictEqual(applied.length, allIds.length, "it migrates once the holder commits")
    })
  )

  it.scoped("every integer column is 64-bit: each table takes a millisecond time and a 1e15 nano-unit balance", () =>
    Effect.gen(function* () {
      const schema = yield* freshSchema
      yield* Effect.gen(function* () {
        yield* migrate(AllMigrations)
        const sql = yield* SqlClient.SqlClient
        const columns = yield* sql<Column>`
          SELECT table_name, column_name, data_type, is_generated FROM information_schema.columns
          WHERE table_schema = ${schema} AND table_name NOT LIKE 'keel_migrations_%'
          ORDER BY table_name, ordinal_position`
        assert.deepStrictEqual(
          columns.filter((c) => c.data_type === "integer" || c.data_type === "smallint"),
          [],
          "no 32-bit integer columns"
        )
        for (const [round, value] of WIDE.entries()) yield* insertEverywhere(columns, value, round)
        for (const c of columns.filter((c) => c.data_type === "bigint")) {
          const rows = yield* sql<{ v: string }>`SELECT ${sql(c.column_name)}::text AS v FROM ${sql(c.table_name)}`
          assert.deepStrictEqual(rows.map((r) => r.v).sort(), expectedIn(c), `${c.table_name}.${c.column_name}`)
        }
      }).pipe(Effect.provide(pgClientIn(schema)))
    })
  )

  it.scoped("object keys compare by code point whatever the database's collation (platform 0005)", () =>
    Effect.gen(function* () {
      const schema = yield* freshSchema
      yield* Effect.gen(function* () {
        yield* migrate(AllMigrations)
        const sql = yield* SqlClient.SqlClient
        const [column] = yield* sql<{ collation_name: string | null }>`
          SELECT collation_name FROM information_schema.columns
          WHERE table_schema = ${schema} AND table_name = 'objects' AND column_name = 'key'`
        assert.strictEqual(column?.collation_name, "C")
        const keys = ["b", "B", "_z", "a-b", "ab", "a/b", "é", "Z"]
        for (const key of keys)
          yield* sql`INSERT INTO objects (key, body, size, sha256, modified_at) VALUES (${key}, ${Buffer.from("")}, 0, '', 0)`
        // A language collation (ICU's en-US, as a database made with en_US.UTF-8 would compare) orders them otherwise.
        const language = yield* sql<{ key: string }>`SELECT key FROM objects ORDER BY key COLLATE "en-US-x-icu"`
        const stored = yield* sql<{ key: string }>`SELECT key FROM objects ORDER BY key`
        const codePoints = [...keys].sort()
        assert.notDeepEqual(
          language.map((r) => r.key),
          codePoints
        )
        assert.deepStrictEqual(
          stored.map((r) => r.key),
          codePoints
        )
      }).pipe(Effect.provide(pgClientIn(schema)))
    })
  )

  it.scoped("a migration without a PostgreSQL branch stops the migration on PostgreSQL, naming itself", () =>
    Effect.gen(function* () {
      const schema = yield* freshSchema
      const create = Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE TABLE probe_things (n BIGINT)`)
      const set = withPostgres(
        { domain: "probe", migrations: { "0001_things": create, "0002_more": create } },
        {
          "0001_things": portable
        }
      )
      const exit = yield* Effect.exit(migrate([set]).pipe(Effect.provide(pgClientIn(schema, 1))))
      assert.isTrue(Exit.isFailure(exit))
      assert.include(
        String(Exit.isFailure(exit) ? exit.cause : ""),
        "migration probe/0002_more has no PostgreSQL branch"
      )
      const tables = yield* Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql`SELECT table_name FROM information_schema.tables WHERE table_schema = ${schema}`
      ).pipe(Effect.provide(pgClientIn(schema, 1)))
      assert.deepStrictEqual(tables, [], "nothing of the failed run is left (one transaction)")
    })
  )
})

describe("withPostgres", () => {
  it("refuses a PostgreSQL migration that has no SQLite one", () => {
    assert.throws(
      () => withPostgres({ domain: "probe", migrations: {} }, { "0001_typo": portable }),
      "probe: PostgreSQL migrations without a SQLite one: 0001_typo"
    )
  })
})
