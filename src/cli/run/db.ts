import { Effect } from "effect"
import { AllDomains, AllMigrations } from "../../layers/Migrations.js"
import { Database, migrate } from "../../services/platform/Database.js"
import { emit, table } from "../Output.js"

export const status = ({ json }: { readonly json: boolean }) =>
  Effect.gen(function* () {
    const database = yield* Database
    const info = yield* database.info(AllDomains)
    yield* emit(
      json,
      info,
      (i) =>
        `${i.dialect} ${i.file} (journal ${i.journalMode})\n` +
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
