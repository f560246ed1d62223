import {
  EntityId,
  MessageStorage,
  RunnerHealth,
  RunnerStorage,
  Runners,
  Sharding,
  ShardingConfig
} from "@effect/cluster"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Layer, Option } from "effect"
import {
  type ClusterSettings,
  clusterSettings,
  isPrivateAddress,
  parseHostPort,
  planRunners
} from "../../src/services/platform/ClusterConfig.js"
import { shardOf } from "../../src/services/platform/ClusterStatus.js"

const settingsFrom = (env: Record<string, string>) =>
  Effect.withConfigProvider(clusterSettings, ConfigProvider.fromMap(new Map(Object.entries(env))))

const fit = { engine: "pg", sharedVaultKey: true, objectStore: "sql" } as const

const refusal = (exit: Exit.Exit<unknown, { readonly code: string; readonly detail: string }>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error.code : "started"

describe("runners mode's settings and refusals (docs/cluster.md)", () => {
  it.effect("single is the default; runners mode reads Keel's own names", () =>
    Effect.gen(function* () {
      const defaults = yield* settingsFrom({})
      assert.strictEqual(defaults.mode, "single")
      assert.strictEqual(defaults.shards, 300)
      const set = yield* settingsFrom({
        KEEL_CLUSTER_MODE: "runners",
        KEEL_RUNNER_ADDRESS: "10.0.0.5:7400",
        KEEL_RUNNER_LISTEN: "0.0.0.0:7400",
        KEEL_RUNNER_WEIGHT: "2",
        KEEL_RUNNER_SHARD_GROUPS: "default,local-web-1",
        KEEL_CLUSTER_SHARDS: "60"
      })
      assert.deepStrictEqual(
        [set.mode, set.weight, set.shards, set.shardGroups, Option.getOrNull(set.runnerListen)],
        ["runners", 2, 60, ["default", "local-web-1"], "0.0.0.0:7400"]
      )
    })
  )

  it.effect("refused on SQLite, without a shared vault key, or with this machine's own object store", () =>
    Effect.gen(function* () {
      const settings = yield* settingsFrom({ KEEL_CLUSTER_MODE: "runners", KEEL_RUNNER_ADDRESS: "127.0.0.1:7400" })
      const plan = (facts: Parameters<typeof planRunners>[1]) => Effect.exit(planRunners(settings, facts))
      assert.strictEqual(refusal(yield* plan({ ...fit, engine: "sqlite" })), "RUNNERS_NEED_POSTGRES")
      assert.strictEqual(refusal(yield* plan({ ...fit, sharedVaultKey: false })), "RUNNERS_NEED_VAULT_KEY")
      assert.strictEqual(refusal(yield* plan({ ...fit, objectStore: "fs" })), "RUNNERS_NEED_SHARED_OBJECTS")
      const planned = yield* planRunners(settings, fit)
      assert.deepStrictEqual(planned, {
        address: { host: "127.0.0.1", port: 7400 },
        listen: { host: "127.0.0.1", port: 7400 }
      })
    })
  )

  it.effect("the runner port binds a private address only, unless a public one is allowed on purpose", () =>
    Effect.gen(function* () {
      const planWith = (env: Record<string, string>) =>
        Effect.flatMap(settingsFrom({ KEEL_CLUSTER_MODE: "runners", ...env }), (settings: ClusterSettings) =>
          Effect.exit(planRunners(settings, fit))
        )
      for (const listen of ["0.0.0.0:7400", "[::]:7400", "8.8.8.8:7400", "[2001:db8::1]:7400"])
        assert.strictEqual(
          refusal(yield* planWith({ KEEL_RUNNER_ADDRESS: "10.0.0.5:7400", KEEL_RUNNER_LISTEN: listen })),
          "RUNNER_ADDRESS_PUBLIC",
          listen
        )
      for (const listen of ["127.0.0.1:7400", "10.1.2.3:7400", "172.20.0.1:7400", "192.168.1.9:7400", "[::1]:7400"])
        assert.strictEqual(
          refusal(yield* planWith({ KEEL_RUNNER_ADDRESS: "10.0.0.5:7400", KEEL_RUNNER_LISTEN: listen })),
          "started",
          listen
        )
      assert.strictEqual(
        refusal(
          yield* planWith({
            KEEL_RUNNER_ADDRESS: "203.0.113.7:7400",
            KEEL_RUNNER_LISTEN: "0.0.0.0:7400",
            KEEL_RUNNER_ALLOW_PUBLIC: "true"
          })
        ),
        "started"
      )
      for (const address of ["", "host", "host:0", "host:70000", "a:b:c"])
        assert.strictEqual(
          refusal(yield* planWith({ KEEL_RUNNER_ADDRESS: address })),
          "RUNNER_ADDRESS_INVALID",
          address
        )
      assert.strictEqual(refusal(yield* planWith({})), "RUNNER_ADDRESS_INVALID")
    })
  )

  it("address helpers: host:port forms and private ranges", () => {
    assert.deepStrictEqual(parseHostPort("[fd00::2]:7400"), { host: "fd00::2", port: 7400 })
    assert.deepStrictEqual(parseHostPort("runner-1.internal:7400"), { host: "runner-1.internal", port: 7400 })
    assert.isTrue(isPrivateAddress("100.64.0.1"))
    assert.isTrue(isPrivateAddress("fe80::1"))
    assert.isFalse(isPrivateAddress("1.1.1.1"))
    assert.isFalse(isPrivateAddress("not-an-ip"))
  })
})

describe("the shard of an actor, as ctl cluster status computes it", () => {
  it.effect("agrees with @effect/cluster's Sharding for tickers and lease keys, at 300 and at 30 shards", () =>
    Effect.gen(function* () {
      for (const shards of [300, 30]) {
        const sharding = yield* Sharding.Sharding.pipe(
          Effect.provide(
            Sharding.layer.pipe(
              Layer.provideMerge(Runners.layerNoop),
              Layer.provideMerge(MessageStorage.layerMemory),
              Layer.provide([RunnerStorage.layerMemory, RunnerHealth.layerNoop]),
              Layer.provide(ShardingConfig.layer({ shardsPerGroup: shards }))
            )
          )
        )
        for (const id of ["RUNA", "SAGE", "janitor:web-1", "storage:host-7", "x", "ÜNICODE-✓", ""]) {
          assert.strictEqual(
            shardOf(id, shards),
            sharding.getShardId(EntityId.make(id), "default").id,
            `${id} at ${shards}`
          )
        }
      }
    }).pipe(Effect.scoped)
  )
})
