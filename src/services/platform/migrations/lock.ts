import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The advisory lock every Keel process takes to migrate a PostgreSQL database: keys ("KEEL" as 0x4b45454c, the
 * hash of the schema it migrates). Per schema, because that is where the tables go: processes migrating one
 * schema wait for each other, installations (or test files) in other schemas of the same database do not. The
 * two-key form lives in a space of its own, apart from the one-key (bigint) locks @effect/cluster takes for its
 * shards, so the two never collide.
 */
export const MIGRATION_LOCK = "pg_advisory_xact_lock(1262830924, hashtext(current_schema()))"

/**
 * Runs `migrations` on PostgreSQL in one transaction that first takes the migration lock, so processes starting
 * together migrate one after the other: the second waits for the first to commit, then finds nothing pending.
 * Without it, a second Migrator that lost the race to record its ids takes "Migrations already running" for done
 * and goes on while the first is still creating tables; and two processes creating a history table at once
 * fail on PostgreSQL's catalog. Every domain's history table is created here, under the lock, with the columns
 * @effect/sql's Migrator gives it, so the Migrator's own probe for it (a failing `::regclass` would abort this
 * transaction) always finds it. One transaction for all domains: a failing migration leaves the database as it
 * was before any of them (PostgreSQL's DDL is transactional).
 */
export const serializedOnPostgres = <A, E, R>(
  historyTables: ReadonlyArray<string>,
  migrations: Effect.Effect<A, E, R>
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return yield* sql.withTransaction(
      Effect.gen(function* () {
        yield* sql.unsafe(`SELECT ${MIGRATION_LOCK}`)
        for (const table of historyTables)
          yield* sql`CREATE TABLE IF NOT EXISTS ${sql(table)} (
            migration_id integer primary key,
            created_at timestamp with time zone not null default now(),
            name text not null
          )`
        return yield* migrations
      })
    )
  })
