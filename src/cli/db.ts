import { Command } from "@effect/cli"
import { ServicesLive, SqliteUnmigratedLive } from "./Layers.js"
import { lazyRun } from "./Lazy.js"
import { json } from "./Output.js"

const impl = lazyRun(() => import("./run/db.js"))

const status = Command.make("status", { json }, (args) => impl((m) => m.status(args))).pipe(
  Command.withDescription("Show the database file, its journal mode and the applied migrations")
)

const migrateCommand = Command.make("migrate", { json }, (args) => impl((m) => m.migrateAll(args))).pipe(
  Command.withDescription("Apply pending migrations of every domain")
)

export const db = Command.make("db").pipe(
  Command.withDescription("The embedded database: status and migrations"),
  Command.withSubcommands([
    status.pipe(Command.provide(ServicesLive)),
    migrateCommand.pipe(Command.provide(SqliteUnmigratedLive))
  ])
)
