import * as fs from "node:fs"
import {
  RunnerAddress,
  RunnerHealth,
  RunnerStorage,
  Runners,
  Sharding,
  ShardingConfig,
  SocketRunner,
  SqlMessageStorage,
  SqlRunnerStorage
} from "@effect/cluster"
import { NodeClusterSocket } from "@effect/platform-node"
import { RpcSerialization } from "@effect/rpc"
import { Cause, Config, Duration, Effect, Layer, Option } from "effect"
import { AppConfig, objectStoreSetting } from "./AppConfig.js"
import { type ClusterSettings, clusterSettings, planRunners, type RunnerPlan } from "./ClusterConfig.js"
import { layerTlsClientProtocol, layerTlsSocketServer } from "./RunnerTls.js"

export interface ClusterOptions {
  /** How often a runner re-reads persisted messages (what resumes work after a crash). */
  readonly pollInterval: Duration.DurationInput
  /** "sql" keeps runner and shard-lock rows in the database; "memory" is for tests. */
  readonly runnerStorage: "sql" | "memory"
  readonly terminationTimeout?: Duration.DurationInput
  /**
   * Encode and decode every message to a local entity as if it crossed the network (the cluster's
   * default). Tests keep it on, so a payload that could not travel is caught; the server's single
   * runner turns it off, since none of its messages ever leaves the process (≈ 300 µs a trade here).
   */
  readonly simulateRemoteSerialization?: boolean
}

/**
 * @effect/cluster creates its tables (`cluster_migrations`, `cluster_messages`, `cluster_runners`, …) when its storage
 * layers are built: two processes starting together on an empty PostgreSQL schema can both try, and the second fails
 * on the catalog's unique index (23505 on `pg_type_typname_nsp_index`) or on the table the first just made (42P07) —
 * a defect of the layer (its migrator dies). What lost the race finds the tables there when built again: up to five
 * tries, 200 ms apart; any other failure, or the fifth, stands.
 */
const catalogRace = (cause: Cause.Cause<unknown>) => {
  const error = Cause.squash(cause) as { readonly cause?: { readonly code?: unknown } }
  const code = error?.cause?.code
  // 23505: the catalog's unique index; 42P07: a table made meanwhile; 42710: a table's row type made meanwhile
  // (`type "cluster_runners" already exists`, seen once in a fresh clone's test run).
  return (
    code === "23505" || code === "42P07" || code === "42710" || /pg_type_typname_nsp_index/.test(Cause.pretty(cause))
  )
}

const builtDespiteRaces = <A, E, R>(layer: Layer.Layer<A, E, R>, triesLeft = 4): Layer.Layer<A, E, R> =>
  // `fresh`: a layer is built once per graph and its result reused, so a second try needs a fresh copy.
  Layer.fresh(layer).pipe(
    Layer.catchAllCause((cause) =>
      triesLeft > 0 && catalogRace(cause)
        ? Layer.unwrapEffect(Effect.as(Effect.sleep("200 millis"), builtDespiteRaces(layer, triesLeft - 1)))
        : Layer.failCause(cause)
    )
  )

const messageStorage = builtDespiteRaces(Layer.orDie(SqlMessageStorage.layer))
const runnerStorage = builtDespiteRaces(Layer.orDie(SqlRunnerStorage.layer))

/**
 * The embedded actor runtime: one runner that owns every shard, its messages in the same SQL
 * database as everything else. This is `SingleRunner` assembled from its parts with an explicit
 * ShardingConfig, because `SingleRunner.layer` reads HOST/PORT/… from the environment and those
 * names belong to the deployment, not to the cluster.
 */
export const singleRunner = (options: ClusterOptions) =>
  Sharding.layer.pipe(
    Layer.provideMerge(Runners.layerNoop),
    Layer.provideMerge(messageStorage),
    Layer.provide([
      options.runnerStorage === "memory" ? RunnerStorage.layerMemory : runnerStorage,
      RunnerHealth.layerNoop
    ]),
    Layer.provide(
      ShardingConfig.layer({
        entityMessagePollInterval: options.pollInterval,
        simulateRemoteSerialization: options.simulateRemoteSerialization ?? true,
        // Shard locks as rows of `cluster_locks` (what SQLite always does), not PostgreSQL session advisory locks:
        // advisory lock numbers are the whole database's, so a Keel in another schema of the same database would
        // find every shard taken and its actors would never start. A row is the schema's own, and the one runner
        // re-takes its rows at once after a restart (same address). docs/database.md, "The actor runtime's tables".
        shardLockDisableAdvisory: true,
        ...(options.terminationTimeout === undefined ? {} : { entityTerminationTimeout: options.terminationTimeout })
      })
    )
  )

export const singleRunnerFromConfig = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) =>
    singleRunner({
      pollInterval: config.clusterPollInterval,
      runnerStorage: "sql",
      simulateRemoteSerialization: false
    })
  )
)

/**
 * One of several runners on one PostgreSQL database (docs/cluster.md): @effect/cluster's socket runner, its shards
 * by the hash ring over the healthy runners, their locks as rows of `cluster_locks` (as the single runner's), a
 * health check that pings the others, messages and replies in the shared database. The timings are the findings'
 * tuned ones, scaled from the lock expiry: failover within about one expiry plus a health interval.
 */
export const socketRunner = (plan: RunnerPlan, settings: ClusterSettings, pollInterval: Duration.DurationInput) => {
  const refresh = Duration.max(Duration.millis(500), Duration.unsafeDivide(settings.lockExpiration, 3))
  // The runner port: plain TCP, or mutual TLS with the shared CA when configured (RunnerTls.ts). The health check
  // dials the others the same way as messages do.
  const [server, clientProtocol] = Option.match(plan.tls, {
    onNone: () => [NodeClusterSocket.layerSocketServer, NodeClusterSocket.layerClientProtocol] as const,
    onSome: (tls) => [layerTlsSocketServer(plan.listen, tls), layerTlsClientProtocol(tls)] as const
  })
  return SocketRunner.layer.pipe(
    Layer.provide(RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(clientProtocol))),
    Layer.provide([server, clientProtocol]),
    Layer.provideMerge(messageStorage),
    Layer.provide(runnerStorage),
    Layer.provide(
      ShardingConfig.layer({
        runnerAddress: Option.some(RunnerAddress.make(plan.address.host, plan.address.port)),
        runnerListenAddress: Option.some(RunnerAddress.make(plan.listen.host, plan.listen.port)),
        runnerShardWeight: settings.weight,
        shardsPerGroup: settings.shards,
        assignedShardGroups: settings.shardGroups,
        shardLockDisableAdvisory: true,
        shardLockExpiration: settings.lockExpiration,
        shardLockRefreshInterval: refresh,
        refreshAssignmentsInterval: refresh,
        runnerHealthCheckInterval: settings.healthInterval,
        entityMessagePollInterval: pollInterval,
        entityReplyPollInterval: Duration.millis(200),
        entityTerminationTimeout: Duration.seconds(2),
        sendRetryInterval: Duration.millis(200),
        simulateRemoteSerialization: false
      })
    ),
    Layer.provide(RpcSerialization.layerMsgPack)
  )
}

/** Whether every runner can read the same vault key: given in the environment, or a key file named on purpose. */
const sharedVaultKey = Effect.gen(function* () {
  const key = yield* Config.option(Config.redacted("KEEL_VAULT_KEY"))
  if (Option.isSome(key)) return true
  const file = yield* Config.option(Config.string("KEEL_VAULT_KEY_FILE"))
  return Option.isSome(file) && fs.existsSync(file.value)
})

/**
 * The actor runtime this process is configured for: the single embedded runner (default), or one of several
 * runners (`KEEL_CLUSTER_MODE=runners`), refused with `RunnersRefused` when the process is not fit to be one.
 */
export const clusterFromConfig = Layer.unwrapEffect(
  Effect.gen(function* () {
    const settings = yield* clusterSettings
    const config = yield* AppConfig
    if (settings.mode === "single") return singleRunnerFromConfig
    const plan = yield* planRunners(settings, {
      engine: Option.isSome(config.databaseUrl) ? "pg" : "sqlite",
      sharedVaultKey: yield* sharedVaultKey,
      objectStore: yield* objectStoreSetting
    })
    yield* Effect.logInfo("runners mode").pipe(
      Effect.annotateLogs({
        address: `${plan.address.host}:${plan.address.port}`,
        listen: `${plan.listen.host}:${plan.listen.port}`,
        shards: settings.shards,
        // Which certificate this runner presents (public facts), never where its key is or what it holds.
        tls: Option.match(plan.tls, {
          onNone: () => "off",
          onSome: (tls) => `on (${tls.subject}; sha256 ${tls.fingerprint}; expires ${tls.expires.toISOString()})`
        })
      })
    )
    // Every runner must read the same registry (authorization, targets, settings): the default is a file in this
    // runner's own data dir, which no other runner reads (docs/cluster.md, "What is and is not shared").
    if (Option.isNone(yield* Config.option(Config.string("KEEL_REGISTRY"))))
      yield* Effect.logWarning(
        "runners mode without KEEL_REGISTRY: this runner reads its own <data dir>/fleet-registry.yml; set KEEL_REGISTRY " +
          "to a git URL or a path every runner reads, so that all of them authorize and act on the same registry"
      )
    return socketRunner(plan, settings, config.clusterPollInterval)
  })
)
