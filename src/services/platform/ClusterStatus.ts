import { ShardingConfig } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { Duration, Effect } from "effect"
import { clusterSettings } from "./ClusterConfig.js"
import { sqlDefect } from "./Database.js"
import { storedTables } from "./transfer/Catalog.js"

/** One runner as the shared database knows it (`cluster_runners`, `cluster_locks`). */
export interface RunnerRow {
  readonly address: string
  /** The health check's verdict, as the runners last recorded it. */
  readonly healthy: boolean
  /** Seconds since its last heartbeat, by the database's clock. */
  readonly heartbeat_age_seconds: number
  /** Its heartbeat is younger than the lock expiry: the others count it in the ring. */
  readonly alive: boolean
  /** Shards whose lock it holds (a row younger than the lock expiry). */
  readonly shards: number
  /** The known actors whose shard it holds, by entity type (see `entities`). */
  readonly entities: Record<string, number>
}

export interface ClusterReport {
  /** This process's setting (`KEEL_CLUSTER_MODE`); the database does not record the others'. */
  readonly mode: "single" | "runners"
  readonly shards_per_group: number
  readonly lock_expiration_seconds: number
  readonly runners: ReadonlyArray<RunnerRow>
  /** Shards of the default group with no live lock: their actors wait for a runner. */
  readonly unassigned_shards: number
  /** Known actors by type: a ticker's `MarketAgent` per agent, a `LeaseKeeper` per lease key. */
  readonly entities: Record<string, number>
}

/**
 * @effect/cluster's shard of an entity id (`Sharding.getShardId` in 0.60: djb2 over the id, then modulo the shards
 * per group, plus one). Kept in step with the package by test/cluster/cluster-status.test.ts, which compares it with
 * a running `Sharding`'s answer.
 */
export const shardOf = (entityId: string, shardsPerGroup: number) => {
  let h = 5381
  let i = entityId.length
  while (i) h = (h * 33) ^ entityId.charCodeAt(--i)
  const optimized = (h & 0xbfffffff) | ((h >>> 1) & 0x40000000)
  return Math.abs(optimized % shardsPerGroup) + 1
}

/**
 * What `ctl cluster status` shows (docs/cluster.md): the runners, their health, the shards and known actors each
 * holds — read from the database every runner shares, so any process (a runner or not) answers the same.
 */
export class ClusterStatus extends Effect.Service<ClusterStatus>()("platform/ClusterStatus", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const settings = yield* clusterSettings
    // The single runner keeps the cluster's own lock expiry (ShardingConfig's default, 35 s) and 300 shards.
    const single = settings.mode === "single"
    const expiry = Math.ceil(
      Duration.toSeconds(single ? ShardingConfig.defaults.shardLockExpiration : settings.lockExpiration)
    )
    const shards = single ? ShardingConfig.defaults.shardsPerGroup : settings.shards

    const ageSeconds = sql.onDialectOrElse({
      // The cluster writes NOW() into a TIMESTAMP column: the session's local time, compared the same way.
      pg: () => "EXTRACT(EPOCH FROM (NOW()::timestamp - last_heartbeat))",
      orElse: () => "(julianday('now') - julianday(last_heartbeat)) * 86400"
    })
    const lockAgeSeconds = sql.onDialectOrElse({
      pg: () => "EXTRACT(EPOCH FROM (NOW()::timestamp - acquired_at))",
      orElse: () => "(julianday('now') - julianday(acquired_at)) * 86400"
    })

    const knownEntities = (tables: ReadonlySet<string>) =>
      Effect.gen(function* () {
        const tickers = tables.has("market_agents")
          ? (yield* sql<{ ticker: string }>`SELECT ticker FROM market_agents`).map((row) => row.ticker)
          : []
        const leases = tables.has("leases")
          ? (yield* sql<{ key: string }>`SELECT key FROM leases`).map((row) => row.key)
          : []
        return { MarketAgent: tickers, LeaseKeeper: leases }
      })

    const report = Effect.gen(function* () {
      const tables = new Set((yield* storedTables(sql)).map((row) => row.name))
      const runners = tables.has("cluster_runners")
        ? yield* sql.unsafe<{ address: string; healthy: unknown; age: unknown }>(
            `SELECT address, healthy, ${ageSeconds} AS age FROM cluster_runners ORDER BY address`
          )
        : []
      const locks = tables.has("cluster_locks")
        ? yield* sql.unsafe<{ shard_id: string; address: string }>(
            `SELECT shard_id, address FROM cluster_locks WHERE ${lockAgeSeconds} < ${expiry}`
          )
        : []
      const holder = new Map<number, string>()
      for (const lock of locks) {
        const at = lock.shard_id.lastIndexOf(":")
        if (lock.shard_id.slice(0, at) === "default") holder.set(Number(lock.shard_id.slice(at + 1)), lock.address)
      }
      const entities = yield* knownEntities(tables)
      const perRunner = new Map<string, Record<string, number>>()
      for (const [type, ids] of Object.entries(entities))
        for (const id of ids) {
          const address = holder.get(shardOf(id, shards))
          if (address === undefined) continue
          const counts = perRunner.get(address) ?? {}
          counts[type] = (counts[type] ?? 0) + 1
          perRunner.set(address, counts)
        }
      const shardsOf = (address: string) => locks.filter((lock) => lock.address === address).length
      return {
        mode: settings.mode,
        shards_per_group: shards,
        lock_expiration_seconds: expiry,
        runners: runners.map((row): RunnerRow => {
          const age = Math.max(0, Math.round(Number(row.age) * 10) / 10)
          return {
            address: row.address,
            healthy: row.healthy === true || Number(row.healthy) === 1,
            heartbeat_age_seconds: age,
            alive: age < expiry,
            shards: shardsOf(row.address),
            entities: perRunner.get(row.address) ?? {}
          }
        }),
        unassigned_shards: shards - holder.size,
        entities: Object.fromEntries(Object.entries(entities).map(([type, ids]) => [type, ids.length]))
      } satisfies ClusterReport
    }).pipe(sqlDefect)

    return { report } as const
  })
}) {}
