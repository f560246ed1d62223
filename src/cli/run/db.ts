import { Effect } from "effect"
import { AllDomains, AllMigrations } from "../../layers/Migrations.js"
import { Database, type DatabaseInfo, migrate } from "../../services/platform/Database.js"
import { emit, table } from "../Output.js"

/** SQLite: `sqlite <file> (journal wal)`; PostgreSQL: `postgresql <url without password> (server 15.20)`. */
const headline = (i: DatabaseInfo) =>
  i.engine === "postgresql"
    ? `postgresql ${i.url ?? "(url not known)"} (server ${i.serverVersion ?? "unknown"})`
    : `${i.dialect} ${i.file} (journal ${i.journalMode})`

export const status = ({ json }: { readonly json: boolean }) =>
  Effect.gen(function* () {
    const database = yield* Database
    const info = yield* database.info(AllDomains)
    yield* emit(
      json,
      info,
      (i) =>
        `${headline(i)}\n` +
        table(
          ["DOMAIN", "ID", "MIGRATION"],
          i.migrations.map((m) => [m.domain, String(m.id).padStart(4, "0"), m.name])
        )
    )
  })

export const migrateAll = ({ json }: { readonly json: boolean }) =>
  Effect.gen(function* () {
    const applied = yield* migrate(AllMigrations).pipe(Effect.orDie)
    yield* emit(json, { applied }, ({ applied }) =>
      applied.length === 0
        ? "database is up to date"
        : applied.map((m) => `applied ${m.domain}/${String(m.id).padStart(4, "0")}_${m.name}`).join("\n")
    )
  })
