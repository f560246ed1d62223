import { Layer } from "effect"
import { AppConfig } from "../services/platform/AppConfig.js"
import { databaseFromConfig, migrationsLayer, sqliteFromConfig } from "../services/platform/Database.js"
import { AllMigrations } from "./Migrations.js"
import { SettingsChecked } from "./Settings.js"

/**
 * The database of the configuration, migrated before anything reads it: PostgreSQL when KEEL_DATABASE_URL is set,
 * else the data dir's embedded SQLite file. The `SqlDialect` is provided beside the `SqlClient`.
 */
export const SqlLive = migrationsLayer(AllMigrations).pipe(Layer.provideMerge(databaseFromConfig))

/**
 * The configured database, migrated (SqlLive), and the environment's settings, every domain's checked first
 * (SettingsChecked): what each domain's own graph stands on (a command builds its domain's services on it, not
 * every domain's). Migrations stay whole: the database is shared by every domain, so each command brings all of it
 * up to date, whichever domain it serves.
 */
export const SqlWithSettingsLive = SqlLive.pipe(
  Layer.provideMerge(SettingsChecked),
  Layer.provideMerge(AppConfig.Default)
)

/** The database without its migrations: for `ctl db migrate`, which applies them itself. */
export const SqlUnmigratedLive = databaseFromConfig.pipe(Layer.provideMerge(AppConfig.Default))

/** The data dir's SQLite file, migrated, whatever KEEL_DATABASE_URL says: for tests about the file itself. */
export const SqlFileLive = migrationsLayer(AllMigrations).pipe(Layer.provideMerge(sqliteFromConfig))
