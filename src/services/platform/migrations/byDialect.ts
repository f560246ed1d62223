import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"
import type { DomainMigrations } from "../Database.js"

export type Migration = Effect.Effect<void, SqlError, SqlClient.SqlClient>

/**
 * One migration written once per engine (docs/database.md, "Migrations"). The engine is the client's: a
 * database is migrated by one engine for its whole life, so the two branches only ever need to agree on the
 * schema they leave behind (test/platform/schema-parity.test.ts), not on their statements.
 */
export const byDialect = (branches: { readonly sqlite: Migration; readonly pg: Migration }): Migration =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.onDialectOrElse({
      sqlite: () => branches.sqlite,
      pg: () => branches.pg,
      orElse: () => Effect.dieMessage("Keel's migrations are written for SQLite and PostgreSQL only")
    })
  )

/**
 * A PostgreSQL branch that is the SQLite migration itself: its statements are in the common subset (TEXT, BIGINT,
 * ALTER TABLE … ADD COLUMN, partial indexes) and mean the same on both engines.
 */
export const portable = "portable" as const

const branches = (set: DomainMigrations, pg: Readonly<Record<string, Migration | typeof portable>>) =>
  Object.fromEntries(
    Object.entries(set.migrations).map(([id, sqlite]) => {
      const branch = pg[id]
      return [
        id,
        byDialect({
          sqlite,
          pg:
            branch === portable
              ? sqlite
              : (branch ?? Effect.dieMessage(`migration ${set.domain}/${id} has no PostgreSQL branch`))
        })
      ]
    })
  )

/**
 * A domain's migrations with a PostgreSQL branch for each id. The SQLite set stays exactly as it landed (its text
 * never changes: test/platform/sqlite-migrations.test.ts); `pg` has the same ids. An id without a PostgreSQL
 * branch dies on PostgreSQL, naming itself (the parity test runs every one); a PostgreSQL id without a SQLite
 * migration is refused when the set is built.
 */
export const withPostgres = (
  set: DomainMigrations,
  pg: Readonly<Record<string, Migration | typeof portable>>
): DomainMigrations => {
  const orphans = Object.keys(pg).filter((id) => !(id in set.migrations))
  if (orphans.length > 0)
    throw new Error(`${set.domain}: PostgreSQL migrations without a SQLite one: ${orphans.join(", ")}`)
  return { domain: set.domain, migrations: branches(set, pg) }
}
