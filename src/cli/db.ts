import { Args, Command } from "@effect/cli"
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

export const exportConfig = {
  file: Args.text({ name: "FILE" }).pipe(
    Args.withDescription("Where to write the export (NDJSON, mode 0600; replaced when it exists); - for stdout")
  ),
  json
}

const exportCommand = Command.make("export", exportConfig, (args) => impl((m) => m.exportDatabase(args))).pipe(
  Command.withDescription(
    'Write every Keel table of this database to FILE, in one consistent read, to import elsewhere (docs/database.md, "Moving an installation"); stop the server first'
  )
)

export const importConfig = {
  file: Args.text({ name: "FILE" }).pipe(Args.withDescription("An export (ctl db export); - for stdin")),
  json
}

const importCommand = Command.make("import", importConfig, (args) => impl((m) => m.importDatabase(args))).pipe(
  Command.withDescription(
    "Fill this database, which must be empty, from an export: all of it in one transaction, identities moved past the highest id, then the ledger audited (a failed audit rolls it back)"
  )
)

export const db = Command.make("db").pipe(
  Command.withDescription("The database (embedded SQLite or PostgreSQL): status, migrations, export and import"),
  Command.withSubcommands([
    status.pipe(Command.provide(DatabaseLive)),
    migrateCommand.pipe(Command.provide(SqlUnmigratedLive)),
    // Their layer is provided by the command once its arguments are known to fit (run/db.ts).
    exportCommand,
    importCommand
  ])
)
