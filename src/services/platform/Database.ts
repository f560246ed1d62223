import { Migrator, SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Cause, Data, Duration, Effect, Layer, Schedule, Schema } from "effect"
import { AppConfig } from "./AppConfig.js"
import { serializedOnPostgres } from "./migrations/lock.js"
import { ensurePrivateDir, preparePrivateDatabase } from "./PrivateFiles.js"
import { isSqliteBusy, sqliteCode } from "./sql/SqliteCodes.js"
import * as SqliteImmediate from "./sql/SqliteImmediate.js"

/**
 * The migrations of one domain. Each domain keeps its own history table
 * (`keel_migrations_<domain>`), so domains number their migrations independently and a
 * migration added to one domain is never skipped because another domain is further along.
 */
export interface DomainMigrations {
  readonly domain: string
  /** Keys are `<id>_<name>`, e.g. `0001_create_leases`. */
  readonly migrations: Record<string, Effect.Effect<void, SqlError, SqlClient.SqlClient>>
}

export class MigrationFailed extends Data.TaggedError("MigrationFailed")<{
  readonly domain: string
  readonly message: string
  readonly cause: unknown
}> {}

/**
 * The data dir's database cannot be opened as SQLite (not a database, damaged, unreadable). A command or the
 * server stops with this one line, before anything is written; the file is left as it is for the operator.
 */
export class DatabaseUnavailable extends Schema.TaggedError<DatabaseUnavailable>()("DatabaseUnavailable", {
  code: Schema.Literal("DATABASE_UNAVAILABLE"),
  detail: Schema.String
}) {}

const openFailure = (file: string) => (cause: Cause.Cause<unknown>) => {
  const error = Cause.squash(cause)
  const reason = error instanceof Error ? error.message : String(error)
  return Layer.fail(
    new DatabaseUnavailable({ code: "DATABASE_UNAVAILABLE", detail: `cannot open the database ${file}: ${reason}` })
  )
}

export interface AppliedMigration {
  readonly domain: string
  readonly id: number
  readonly name: string
}

const migrationTable = (domain: string) => `keel_migrations_${domain}`

const runMigrator = Migrator.make({})

/** Runs every pending migration of every domain, in the order given; returns what it applied. */
const migrateEach = (sets: ReadonlyArray<DomainMigrations>) =>
  Effect.gen(function* () {
    const applied: Array<AppliedMigration> = []
    for (const set of sets) {
      const done = yield* runMigrator({
        loader: Migrator.fromRecord(set.migrations),
        table: migrationTable(set.domain)
      }).pipe(
        Effect.mapError(
          (cause) =>
            new MigrationFailed({
              domain: set.domain,
              message: `migrations of ${set.domain} failed: ${cause.message}`,
              cause
            })
        )
      )
      for (const [id, name] of done) applied.push({ domain: set.domain, id, name })
    }
    return applied
  })

/**
 * Runs every pending migration of every domain, in the order given; returns what it applied. On SQLite each
 * domain commits on its own (the Migrator's transaction takes the write lock, which serializes processes); on
 * PostgreSQL all of them run in one transaction under one advisory lock (migrations/lock.ts).
 */
export const migrate = (sets: ReadonlyArray<DomainMigrations>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const tables = sets.map((set) => migrationTable(set.domain))
    const applied = yield* sql.onDialectOrElse({
      pg: () =>
        serializedOnPostgres(tables, migrateEach(sets)).pipe(
          Effect.catchTag("SqlError", (cause) =>
            Effect.fail(new MigrationFailed({ domain: "*", message: `migrations failed: ${cause.message}`, cause }))
          )
        ),
      orElse: () => migrateEach(sets)
    })
    if (applied.length > 0) {
      yield* Effect.logInfo("database migrated").pipe(
        Effect.annotateLogs("applied", applied.map((m) => `${m.domain}/${m.id}_${m.name}`).join(","))
      )
    }
    return applied
  })

/** A layer that migrates before anything that depends on it is built. */
export const migrationsLayer = (sets: ReadonlyArray<DomainMigrations>) =>
  Layer.effectDiscard(migrate(sets).pipe(Effect.orDie))

/**
 * The embedded SQLite database: one file under the data dir, WAL on (the driver's default).
 * The directory is created on first use, never by merely reading config; the data dir 0700, the database and its
 * companions 0600 (docs/security.md), tightened with a warning where a looser mode was left.
 */
export const sqliteFromConfig = Layer.unwrapEffect(
  Effect.gen(function* () {
    const config = yield* AppConfig
    if (config.databaseFile !== ":memory:") {
      const prepared = yield* Effect.either(
        Effect.zipRight(ensurePrivateDir(config.dataDir), preparePrivateDatabase(config.databaseFile))
      )
      if (prepared._tag === "Left")
        return Layer.fail(
          new DatabaseUnavailable({
            code: "DATABASE_UNAVAILABLE",
            detail: `cannot open the database ${config.databaseFile}: ${prepared.left.path}: ${prepared.left.reason}`
          })
        )
    }
    const client = SqliteImmediate.layer({ filename: config.databaseFile })
    // SQLite's default page cache is 2 MB; search indexes are far larger. Memory-mapped reads and a
    // bigger cache keep hot index pages off the read() path. In WAL mode, synchronous=NORMAL syncs the
    // log at checkpoints instead of at every commit: a killed process loses nothing it committed, an OS
    // crash or power loss may roll back the last commits (never corrupts). FULL is one setting away.
    const tuned = Layer.effectDiscard(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql.unsafe(`PRAGMA cache_size = -${config.sqliteCacheMb * 1024}`)
        yield* sql.unsafe(`PRAGMA mmap_size = ${config.sqliteMmapMb * 1024 * 1024}`)
        yield* sql.unsafe(`PRAGMA synchronous = ${config.sqliteSynchronous.toUpperCase()}`)
        // Every process sharing the file waits this long for another's write lock instead of failing at once.
        yield* sql.unsafe(`PRAGMA busy_timeout = ${Math.round(Duration.toMillis(config.sqliteBusyTimeout))}`)
      }).pipe(Effect.orDie)
    )
    return tuned.pipe(Layer.provideMerge(client), Layer.catchAllCause(openFailure(config.databaseFile)))
  })
)

/** An in-memory SQLite database: the same engine and migrations, nothing on disk. */
export const sqliteMemory = SqliteImmediate.layer({ filename: ":memory:" })

export interface DatabaseInfo {
  readonly dialect: string
  readonly file: string
  readonly journalMode: string
  readonly migrations: ReadonlyArray<AppliedMigration>
}

/** Liveness and introspection of the database that every repository shares. */
export class Database extends Effect.Service<Database>()("platform/Database", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig

    const dialect = sql.onDialectOrElse({ sqlite: () => "sqlite", pg: () => "pg", orElse: () => "other" })
    const ping = sql`SELECT 1 AS ok`.pipe(Effect.asVoid, Effect.withSpan("Database.ping"))

    const info = (domains: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const journalMode =
          dialect === "sqlite"
            ? ((yield* sql<{ journal_mode: string }>`PRAGMA journal_mode`)[0]?.journal_mode ?? "unknown")
            : "n/a"
        const migrations: Array<AppliedMigration> = []
        for (const domain of domains) {
          const rows = yield* sql<{ migration_id: number; name: string }>`
            SELECT migration_id, name FROM ${sql(migrationTable(domain))} ORDER BY migration_id`.pipe(
            Effect.catchAll(() => Effect.succeed([]))
          )
          for (const row of rows) migrations.push({ domain, id: Number(row.migration_id), name: row.name })
        }
        return { dialect, file: config.databaseFile, journalMode, migrations } satisfies DatabaseInfo
      }).pipe(Effect.orDie)

    return { dialect, ping, info } as const
  })
}) {}

export { isSqliteBusy, sqliteCode } from "./sql/SqliteCodes.js"

/**
 * Retries a write that met SQLITE_BUSY/LOCKED (past the busy timeout, or a stale snapshot, which SQLite
 * does not wait for): up to 8 more tries, exponential from 20 ms with jitter, so contending processes
 * spread out instead of colliding again.
 */
export const retryBusy = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.retry(effect, {
    while: isSqliteBusy,
    schedule: Schedule.exponential("20 millis").pipe(Schedule.jittered, Schedule.intersect(Schedule.recurs(8)))
  })

/** A database failure as a defect that says what SQLite said (its code and message), not only "failed". */
export const sqlDefect = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.orDieWith(effect, (error) => {
    const code = sqliteCode(error)
    const cause = (error as { cause?: { message?: unknown } }).cause?.message
    const message = (error as { message?: unknown }).message
    return new Error(
      `${typeof message === "string" ? message : "database failure"}${code === undefined ? "" : ` (${code}${typeof cause === "string" ? `: ${cause}` : ""})`}`
    )
  })
