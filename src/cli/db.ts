import { Command } from "@effect/cli"
import { Effect } from "effect"
import { ServicesLive, SqliteUnmigratedLive } from "../layers/Live.js"
import { AllDomains, AllMigrations } from "../layers/Migrations.js"
import { Database, migrate } from "../services/platform/Database.js"
import { emit, json, table } from "./Output.js"

const status = Command.make("status", { json }, ({ json }) =>
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
).pipe(Command.withDescription("Show the database file, its journal mode and the applied migrations"))

const migrateCommand = Command.make("migrate", { json }, ({ json }) =>
  Effect.gen(function* () {
    const applied = yield* migrate(AllMigrations).pipe(Effect.orDie)
    yield* emit(json, { applied }, ({ applied }) =>
      applied.length === 0
        ? "database is up to date"
        : applied.map((m) => `applied ${m.domain}/${String(m.id).padStart(4, "0")}_${m.name}`).join("\n")
    )
  })
).pipe(Command.withDescription("Apply pending migrations of every domain"))

export const db = Command.make("db").pipe(
  Command.withDescription("The embedded database: status and migrations"),
  Command.withSubcommands([
    status.pipe(Command.provide(ServicesLive)),
    migrateCommand.pipe(Command.provide(SqliteUnmigratedLive))
  ])
)
