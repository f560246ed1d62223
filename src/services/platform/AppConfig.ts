import * as os from "node:os"
import * as path from "node:path"
import { Config, Duration, Effect, Option, type Redacted, Schema } from "effect"
import { durationSetting } from "./DurationSetting.js"

export const LogFormat = Schema.Literal("auto", "pretty", "json", "logfmt")
export type LogFormat = typeof LogFormat.Type

export const LogLevelName = Schema.Literal("all", "trace", "debug", "info", "warning", "error", "fatal", "none")
export type LogLevelName = typeof LogLevelName.Type

/**
 * Every setting a deployment varies, read once from the environment through Effect `Config`.
 * The table of variables lives in docs/configuration.md; keep the two in step.
 */
export const appConfig = Config.all({
  dataDir: Config.string("KEEL_DATA_DIR").pipe(Config.withDefault("./.keel")),
  databaseFile: Config.option(Config.string("KEEL_DATABASE_FILE")),
  // A secret (it may carry a password): never printed, only its redacted form (sql/DatabaseUrl.ts).
  databaseUrl: Config.option(
    Config.redacted(
      Config.string("KEEL_DATABASE_URL").pipe(
        Config.validate({
          message: "must be a postgres:// or postgresql:// URL",
          validation: (url) => /^postgres(ql)?:\/\/./.test(url)
        })
      )
    )
  ),
  databasePool: Config.integer("KEEL_DATABASE_POOL").pipe(
    Config.validate({
      message: "must be a whole number of connections from 1 to 1000",
      validation: (n) => n >= 1 && n <= 1000
    }),
    Config.withDefault(10)
  ),
  databaseConnectTimeout: durationSetting("KEEL_DATABASE_CONNECT_TIMEOUT").pipe(
    Config.withDefault(Duration.seconds(5))
  ),
  httpHost: Config.string("KEEL_HTTP_HOST").pipe(Config.withDefault("127.0.0.1")),
  httpPort: Config.port("KEEL_HTTP_PORT").pipe(Config.withDefault(8080)),
  bodyLimitBytes: Config.integer("KEEL_HTTP_BODY_LIMIT").pipe(
    Config.validate({ message: "must be a positive number of bytes", validation: (n) => n > 0 }),
    Config.withDefault(1024 * 1024)
  ),
  shutdownGrace: durationSetting("KEEL_SHUTDOWN_GRACE").pipe(Config.withDefault(Duration.seconds(30))),
  logFormat: Config.literal("auto", "pretty", "json", "logfmt")("KEEL_LOG_FORMAT").pipe(Config.withDefault("auto")),
  logLevel: Config.literal(
    "all",
    "trace",
    "debug",
    "info",
    "warning",
    "error",
    "fatal",
    "none"
  )("KEEL_LOG_LEVEL").pipe(Config.withDefault("info")),
  demoData: Config.boolean("KEEL_DEMO_DATA").pipe(Config.withDefault(true)),
  sqliteCacheMb: Config.integer("KEEL_SQLITE_CACHE_MB").pipe(
    Config.validate({ message: "must be a whole number of MiB, at least 1", validation: (mb) => mb >= 1 }),
    Config.withDefault(64)
  ),
  sqliteMmapMb: Config.integer("KEEL_SQLITE_MMAP_MB").pipe(
    Config.validate({ message: "must be a whole number of MiB, 0 or more", validation: (mb) => mb >= 0 }),
    Config.withDefault(256)
  ),
  sqliteSynchronous: Config.literal("normal", "full")("KEEL_SQLITE_SYNCHRONOUS").pipe(Config.withDefault("normal")),
  sqliteBusyTimeout: durationSetting("KEEL_SQLITE_BUSY_TIMEOUT").pipe(Config.withDefault(Duration.seconds(10))),
  clusterPollInterval: durationSetting("KEEL_CLUSTER_POLL_INTERVAL").pipe(Config.withDefault(Duration.seconds(1))),
  tracing: Config.boolean("KEEL_TRACING").pipe(Config.withDefault(false))
})

export interface AppSettings {
  readonly dataDir: string
  /** Absolute path of the SQLite file, or ":memory:". */
  readonly databaseFile: string
  /** KEEL_DATABASE_URL: PostgreSQL instead of the SQLite file when set (docs/database.md). */
  readonly databaseUrl: Option.Option<Redacted.Redacted>
  /** Most connections the PostgreSQL pool opens. */
  readonly databasePool: number
  /** How long connecting to PostgreSQL may take (at start, and for each new pool connection). */
  readonly databaseConnectTimeout: Duration.Duration
  readonly httpHost: string
  readonly httpPort: number
  readonly bodyLimitBytes: number
  readonly shutdownGrace: Duration.Duration
  readonly logFormat: LogFormat
  readonly logLevel: LogLevelName
  readonly demoData: boolean
  readonly sqliteCacheMb: number
  readonly sqliteMmapMb: number
  /** WAL with `normal` survives a process crash (kill -9); `full` also the last commits before a power loss. */
  readonly sqliteSynchronous: "normal" | "full"
  /** How long a statement waits for another process's write lock before SQLITE_BUSY (every process sets it). */
  readonly sqliteBusyTimeout: Duration.Duration
  readonly clusterPollInterval: Duration.Duration
  /** Tracer spans in the server (for an OpenTelemetry exporter an embedder adds); off, they cost nothing. */
  readonly tracing: boolean
  /** Whether the per-request log line can be emitted at all (it is logged at Info). */
  readonly requestLog: boolean
}

export const loadSettings = Effect.gen(function* () {
  const raw = yield* appConfig
  const dataDir = path.resolve(raw.dataDir)
  const databaseFile = raw.databaseFile._tag === "Some" ? raw.databaseFile.value : path.join(dataDir, "keel.db")
  return {
    ...raw,
    dataDir,
    databaseFile: databaseFile === ":memory:" ? databaseFile : path.resolve(databaseFile),
    requestLog: ["all", "trace", "debug", "info"].includes(raw.logLevel)
  } satisfies AppSettings
})

/** The resolved settings of this process. Reading it opens nothing. */
export class AppConfig extends Effect.Service<AppConfig>()("platform/AppConfig", {
  effect: loadSettings
}) {}

/** The registry target this host is: KEEL_HOST, or else the machine's hostname. */
export const thisHostName = Effect.map(Config.option(Config.string("KEEL_HOST")), (configured) =>
  Option.getOrElse(configured, () => os.hostname())
)

/**
 * The fs object store's directory (KEEL_OBJECT_DIR, default `<data dir>/objects`): one definition for the store
 * that keeps objects there and the fleet's janitor that must never clean it.
 */
export const objectDirSetting = (dataDir: string) =>
  Config.string("KEEL_OBJECT_DIR").pipe(Config.withDefault(path.join(dataDir, "objects")))

/** The object backend (KEEL_OBJECT_STORE): `fs` (default), `sql` (the application database) or `memory`. */
export const objectStoreSetting = Config.literal(
  "fs",
  "sql",
  "memory"
)("KEEL_OBJECT_STORE").pipe(Config.withDefault("fs" as const))

/** The vault's master-key file (KEEL_VAULT_KEY_FILE, default `<data dir>/vault.key`): the vault's, and the janitor's to protect. */
export const vaultKeyFileSetting = (dataDir: string) =>
  Config.string("KEEL_VAULT_KEY_FILE").pipe(Config.withDefault(path.join(dataDir, "vault.key")))
