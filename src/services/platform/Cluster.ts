import {
  RunnerHealth,
  RunnerStorage,
  Runners,
  Sharding,
  ShardingConfig,
  SqlMessageStorage,
  SqlRunnerStorage
} from "@effect/cluster"
import { type Duration, Effect, Layer } from "effect"
import { AppConfig } from "./AppConfig.js"

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
 * The embedded actor runtime: one runner that owns every shard, its messages in the same SQL
 * database as everything else. This is `SingleRunner` assembled from its parts with an explicit
 * ShardingConfig, because `SingleRunner.layer` reads HOST/PORT/… from the environment and those
 * names belong to the deployment, not to the cluster.
 */
export const singleRunner = (options: ClusterOptions) =>
  Sharding.layer.pipe(
    Layer.provideMerge(Runners.layerNoop),
    Layer.provideMerge(SqlMessageStorage.layer),
    Layer.provide([
      options.runnerStorage === "memory" ? RunnerStorage.layerMemory : Layer.orDie(SqlRunnerStorage.layer),
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
