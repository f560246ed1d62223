import { Command } from "@effect/cli"
import { DatabaseLive, SqlUnmigratedLive } from "./Layers.js"
import { lazyRun } from "./Lazy.js"
import { json } from "./Output.js"

const impl = lazyRun(() => import("./run/db.js"))

const status = Command.make("status", { json }, (args) => impl((m) => m.status(args))).pipe(
  Command.withDescription(
    "Show the database (the SQLite file and its journal mode, or the PostgreSQL URL and server version) and the applied migrations"
  )
)

const migrateCommand = Command.make("migrate", { json }, (args) => impl((m) => m.migrateAll(args))).pipe(
  Command.withDescription("Apply pending migrations of every domain")
)

export const db = Command.make("db").pipe(
  Command.withDescription("The database (embedded SQLite or PostgreSQL): status and migrations"),
  Command.withSubcommands([
    status.pipe(Command.provide(DatabaseLive)),
    migrateCommand.pipe(Command.provide(SqlUnmigratedLive))
  ])
)
