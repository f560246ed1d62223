import { Layer } from "effect"
import { AppConfig } from "../services/platform/AppConfig.js"
import { migrationsLayer, sqliteFromConfig } from "../services/platform/Database.js"
import { AllMigrations } from "./Migrations.js"

/** The embedded SQLite database of the data dir, migrated before anything reads it. */
export const SqlLive = migrationsLayer(AllMigrations).pipe(Layer.provideMerge(sqliteFromConfig))

/** The database without its migrations: for `ctl db migrate`, which applies them itself. */
export const SqliteUnmigratedLive = sqliteFromConfig.pipe(Layer.provideMerge(AppConfig.Default))
