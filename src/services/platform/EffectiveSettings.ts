import * as path from "node:path"
import { Config, Duration, Effect, Option, Redacted } from "effect"
import { AppConfig, objectStoreSetting, thisHostName } from "./AppConfig.js"
import { clusterSettings, runnerTlsState } from "./ClusterConfig.js"
import { durationSetting } from "./DurationSetting.js"
import { displayUrl } from "./GitMirror.js"
import { redisSettings } from "./RedisSettings.js"
import { redactDatabaseUrl } from "./sql/DatabaseUrl.js"

/**
 * Every setting a deployment varies, as this process resolves it, for `ctl config show`: the platform's,
 * the fleet's (registry, host, object store, janitor, git, beacons) and the vault's. A secret is never
 * shown, only where it comes from; a URL is shown without credentials. Opens nothing.
 */
export const effectiveSettings = Effect.gen(function* () {
  const config = yield* AppConfig
  const text = (name: string) => Config.option(Config.string(name)).pipe(Effect.map(Option.getOrUndefined))
  const duration = (name: string, fallback: Duration.Duration) =>
    durationSetting(name).pipe(Config.withDefault(fallback), Effect.map(Duration.format))
  const registry = yield* text("KEEL_REGISTRY")
  const vaultKey = yield* Config.option(Config.redacted("KEEL_VAULT_KEY"))
  const cluster = yield* clusterSettings
  const redis = yield* redisSettings
  return {
    data_dir: config.dataDir,
    database_file: config.databaseFile,
    // PostgreSQL when set: shown without its password.
    database_url: Option.getOrNull(Option.map(config.databaseUrl, (url) => redactDatabaseUrl(Redacted.value(url)))),
    database_pool: config.databasePool,
    database_connect_timeout: Duration.format(config.databaseConnectTimeout),
    http_host: config.httpHost,
    http_port: config.httpPort,
    http_body_limit: config.bodyLimitBytes,
    shutdown_grace: Duration.format(config.shutdownGrace),
    log_format: config.logFormat,
    log_level: config.logLevel,
    demo_data: config.demoData,
    cluster_poll_interval: Duration.format(config.clusterPollInterval),
    // The actor runtime: single, or one of several runners (docs/cluster.md).
    cluster_mode: cluster.mode,
    runner_address: Option.getOrNull(cluster.runnerAddress),
    runner_listen: Option.getOrNull(cluster.runnerListen),
    // Whether the runner port speaks TLS (on, off, or incomplete: refused at start in runners mode); no file's contents.
    runner_tls: runnerTlsState(cluster),
    cluster_shards: cluster.shards,
    runner_lock_expiration: Duration.format(cluster.lockExpiration),
    runner_health_interval: Duration.format(cluster.healthInterval),
    // The Redis rate limits are shared through (docs/marketplace.md, "Rate limits"): without its password.
    redis_url: Option.getOrNull(
      Option.map(redis.url, (url) => redactDatabaseUrl(Redacted.value(url), "KEEL_REDIS_URL"))
    ),
    redis_prefix: redis.prefix,
    sqlite_synchronous: config.sqliteSynchronous,
    sqlite_busy_timeout: Duration.format(config.sqliteBusyTimeout),
    // Fleet
    host: yield* thisHostName,
    registry: registry === undefined ? path.join(config.dataDir, "fleet-registry.yml") : displayUrl(registry),
    registry_ref: (yield* text("KEEL_REGISTRY_REF")) ?? null,
    registry_path: (yield* text("KEEL_REGISTRY_PATH")) ?? "registry.yml",
    git_timeout: yield* duration("KEEL_GIT_TIMEOUT", Duration.seconds(30)),
    object_store: yield* objectStoreSetting,
    object_dir: (yield* text("KEEL_OBJECT_DIR")) ?? path.join(config.dataDir, "objects"),
    janitor_state_dir: (yield* text("KEEL_JANITOR_STATE_DIR")) ?? path.join(config.dataDir, "janitor"),
    control_plane_url: Option.getOrNull(
      Option.map(Option.fromNullable(yield* text("KEEL_CONTROL_PLANE_URL")), displayUrl)
    ),
    beacon_max_skew: yield* duration("KEEL_BEACON_MAX_SKEW", Duration.minutes(5)),
    job_lease: yield* duration("KEEL_JOB_LEASE", Duration.seconds(60)),
    ssh_known_hosts: (yield* text("KEEL_SSH_KNOWN_HOSTS")) ?? path.join(config.dataDir, "known_hosts"),
    // Vault: where the master key comes from, never the key.
    vault_key: Option.isSome(vaultKey)
      ? "KEEL_VAULT_KEY (environment)"
      : ((yield* text("KEEL_VAULT_KEY_FILE")) ?? path.join(config.dataDir, "vault.key")),
    vault_token_ttl: yield* duration("KEEL_VAULT_TOKEN_TTL", Duration.minutes(15)),
    secret_env: (yield* text("KEEL_SECRET_ENV")) ?? null
  }
})
