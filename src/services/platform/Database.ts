import { Migrator, SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { PgClient } from "@effect/sql-pg"
import { Cause, Data, Duration, Effect, Layer, Option, Redacted, Schedule, Schema } from "effect"
import { AppConfig, type AppSettings } from "./AppConfig.js"
import { serializedOnPostgres } from "./migrations/lock.js"
import type { Notifier } from "./notify/Notifier.js"
import { notifierFromClient } from "./notify/NotifierFromClient.js"
import { ensurePrivateDir, preparePrivateDatabase } from "./PrivateFiles.js"
import { failureReason, redactDatabaseUrl } from "./sql/DatabaseUrl.js"
import * as Dialect from "./sql/SqlDialect.js"
import { sqliteCode } from "./sql/SqliteCodes.js"
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

/**
 * A migration failed (and rolled back). Layers that migrate at build die with it (a database that cannot be
 * migrated is no state to serve from); `ctl` prints that defect as one line, `ctl: <message>`, code MIGRATION_FAILED.
 */
export class MigrationFailed extends Data.TaggedError("MigrationFailed")<{
  readonly code: "MIGRATION_FAILED"
  readonly domain: string
  readonly message: string
  readonly cause: unknown
}> {}

/**
 * The database cannot be opened: the data dir's file as SQLite (not a database, damaged, unreadable), or the
 * PostgreSQL server at KEEL_DATABASE_URL (refused, unknown, no answer within the connect timeout). A command or
 * the server stops with this one line, before anything is written; a file is left as it is for the operator.
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
        // The Migrator dies with a MigrationError when a migration's own statement fails: an expected outcome
        // (a database in an unexpected state), so a typed failure that names the statement's error.
        Effect.catchSomeDefect((defect) =>
          defect instanceof Migrator.MigrationError ? Option.some(Effect.fail(defect)) : Option.none()
        ),
        Effect.mapError(
          (cause) =>
            new MigrationFailed({
              code: "MIGRATION_FAILED",
              domain: set.domain,
              message: `migrations of ${set.domain} failed: ${cause.message}${causeText(cause)}`,
              cause
            })
        )
      )
      for (const [id, name] of done) applied.push({ domain: set.domain, id, name })
    }
    return applied
  })

/**
 * Every domain's history already holds its highest migration id: read without a transaction. On SQLite the
 * Migrator's transaction takes the write lock (BEGIN IMMEDIATE), so a process that only starts — `ctl` commands,
 * workers — would otherwise wait for another process's writes just to learn there is nothing to do.
 */
const upToDate = (sets: ReadonlyArray<DomainMigrations>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    for (const set of sets) {
      const latest = Math.max(0, ...Object.keys(set.migrations).map((key) => Number.parseInt(key, 10)))
      const rows = yield* sql<{ id: number | null }>`
        SELECT max(migration_id) AS id FROM ${sql(migrationTable(set.domain))}`.pipe(
        Effect.orElseSucceed(() => [{ id: null }])
      )
      if (Number(rows[0]?.id ?? 0) < latest) return false
    }
    return true
  })

/** What a migration's failure says beneath the Migrator's "Migration … failed": the engine's own message. */
const causeText = (error: { readonly cause?: unknown }) => {
  const inner = error.cause as { message?: unknown; cause?: { message?: unknown } } | undefined
  const said = inner?.cause?.message ?? inner?.message
  return typeof said === "string" && said !== "" ? `: ${said}` : ""
}

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
            Effect.fail(
              new MigrationFailed({
                code: "MIGRATION_FAILED",
                domain: "*",
                message: `migrations failed: ${cause.message}`,
                cause
              })
            )
          )
        ),
      orElse: () => Effect.flatMap(upToDate(sets), (current) => (current ? Effect.succeed([]) : migrateEach(sets)))
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
    const client = withDialect(SqliteImmediate.layer({ filename: config.databaseFile }))
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

/**
 * A client layer with what depends on its engine beside it: its `SqlDialect`, so services can ask which engine they
 * talk to, and its `Notifier` (wake-ups between processes: LISTEN/NOTIFY on PostgreSQL, in-process on SQLite).
 */
export const withDialect = <ROut, E, RIn>(client: Layer.Layer<ROut | SqlClient.SqlClient, E, RIn>) =>
  Layer.merge(Dialect.layerFromClient, notifierFromClient).pipe(Layer.provideMerge(client))

/** An in-memory SQLite database: the same engine and migrations, nothing on disk. */
export const sqliteMemory = withDialect(SqliteImmediate.layer({ filename: ":memory:" }))

/**
 * PostgreSQL at `url`: a pool of at most `pool` connections named `keel` in `pg_stat_activity`. The driver's
 * `SELECT 1` at build (bounded by `connectTimeout`, as is every later connect) makes a server that refuses, does
 * not know the database or does not answer a `DatabaseUnavailable` at start, naming the URL without its password.
 */
export const postgres = (options: {
  readonly url: Redacted.Redacted
  readonly pool: number
  readonly connectTimeout: Duration.DurationInput
}) => {
  const raw = Redacted.value(options.url)
  const shown = redactDatabaseUrl(raw)
  const password = Option.getOrUndefined(Option.liftThrowable(() => new URL(raw).password)())
  const unavailable = (cause: Cause.Cause<unknown>) => {
    const reason = failureReason(Cause.squash(cause))
    const detail = `cannot open the database ${shown}: ${reason}`
    return Layer.fail(
      new DatabaseUnavailable({
        code: "DATABASE_UNAVAILABLE",
        // A driver message never carries the password; should one ever quote the URL, it still does not.
        detail: password === undefined || password === "" ? detail : detail.split(password).join("***")
      })
    )
  }
  return withDialect(
    PgClient.layer({
      url: options.url,
      maxConnections: options.pool,
      connectTimeout: options.connectTimeout,
      applicationName: "keel"
    }).pipe(Layer.catchAllCause(unavailable))
  )
}

/** PostgreSQL at KEEL_DATABASE_URL with the pool and timeout settings. */
const postgresFromConfig = (config: AppSettings, url: Redacted.Redacted) =>
  postgres({ url, pool: config.databasePool, connectTimeout: config.databaseConnectTimeout })

/**
 * The database of this process: PostgreSQL when KEEL_DATABASE_URL is set, else the data dir's SQLite file. Either
 * way the `SqlClient`, its `SqlDialect` and its `Notifier` (SQLite also gives its driver's `SqliteClient`: the hot
 * connection's).
 */
export const databaseFromConfig: Layer.Layer<
  SqlClient.SqlClient | Dialect.SqlDialect | Notifier,
  DatabaseUnavailable,
  AppConfig
> = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) =>
    Option.match(config.databaseUrl, {
      onNone: (): Layer.Layer<SqlClient.SqlClient | Dialect.SqlDialect | Notifier, DatabaseUnavailable, AppConfig> =>
        sqliteFromConfig,
      onSome: (url) => postgresFromConfig(config, url)
    })
  )
)

export interface DatabaseInfo {
  /** `sqlite` or `pg` (the `SqlClient`'s dialect). */
  readonly dialect: string
  readonly engine: "sqlite" | "postgresql"
  /** SQLite: the database file (or `:memory:`). */
  readonly file?: string
  /** PostgreSQL: KEEL_DATABASE_URL without its password. */
  readonly url?: string
  /** PostgreSQL: `SHOW server_version`. */
  readonly serverVersion?: string
  /** SQLite's journal mode (`wal`); `n/a` on PostgreSQL. */
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

    /** What says which database this is: the file and its journal mode, or the server's URL and version. */
    const where = Effect.gen(function* () {
      if (dialect === "pg") {
        const version = (yield* sql<{ server_version: string }>`SHOW server_version`)[0]?.server_version
        const url = Option.map(config.databaseUrl, (u) => redactDatabaseUrl(Redacted.value(u)))
        return {
          dialect,
          engine: "postgresql" as const,
          ...(Option.isSome(url) ? { url: url.value } : {}),
          serverVersion: version ?? "unknown",
          journalMode: "n/a"
        }
      }
      const journalMode =
        dialect === "sqlite"
          ? ((yield* sql<{ journal_mode: string }>`PRAGMA journal_mode`)[0]?.journal_mode ?? "unknown")
          : "n/a"
      return { dialect, engine: "sqlite" as const, file: config.databaseFile, journalMode }
    })

    const info = (domains: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const here = yield* where
        const migrations: Array<AppliedMigration> = []
        for (const domain of domains) {
          const rows = yield* sql<{ migration_id: number; name: string }>`
            SELECT migration_id, name FROM ${sql(migrationTable(domain))} ORDER BY migration_id`.pipe(
            Effect.catchAll(() => Effect.succeed([]))
          )
          for (const row of rows) migrations.push({ domain, id: Number(row.migration_id), name: row.name })
        }
        const result: DatabaseInfo = { ...here, migrations }
        return result
      }).pipe(Effect.orDie)

    return { dialect, ping, info } as const
  })
}) {}

export { isSqliteBusy, sqliteCode } from "./sql/SqliteCodes.js"

/**
 * A failure that either engine's dialect calls retryable: SQLITE_BUSY/LOCKED, or PostgreSQL's 40001
 * serialization failure, 40P01 deadlock, 55P03 lock not available. The two sets of codes cannot be confused
 * (`SQLITE_…` against five-character SQLSTATEs), so callers need not know the engine.
 */
export const isRetryable = (error: unknown) => Dialect.sqlite.retryable(error) || Dialect.pg.retryable(error)

/**
 * Retries a write that met a retryable failure (SQLite: another process's lock past the busy timeout, or a
 * stale snapshot, which SQLite does not wait for; PostgreSQL: a serialization failure, a deadlock, a lock not
 * available): up to 8 more tries, exponential from 20 ms with jitter, so contenders spread out instead of
 * colliding again.
 */
export const retryBusy = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.retry(effect, {
    while: isRetryable,
    schedule: Schedule.exponential("20 millis").pipe(Schedule.jittered, Schedule.intersect(Schedule.recurs(8)))
  })

/** A database failure as a defect that says what the engine said (its code and message), not only "failed". */
export const sqlDefect = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.orDieWith(effect, (error) => {
    const code = sqliteCode(error) ?? Dialect.pgCode(error)
    const cause = (error as { cause?: { message?: unknown } }).cause?.message
    const message = (error as { message?: unknown }).message
    return new Error(
      `${typeof message === "string" ? message : "database failure"}${code === undefined ? "" : ` (${code}${typeof cause === "string" ? `: ${cause}` : ""})`}`
    )
  })
