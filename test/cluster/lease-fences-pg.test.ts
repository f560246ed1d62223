import type { ChildProcess } from "node:child_process"
import { ShardingConfig, SocketRunner, SqlMessageStorage, SqlRunnerStorage } from "@effect/cluster"
import { NodeClusterSocket } from "@effect/platform-node"
import { RpcSerialization } from "@effect/rpc"
import { Effect, Either, Layer, ManagedRuntime } from "effect"
import { afterAll, assert, describe, it } from "vitest"
import { LeaseKeeper } from "../support/keel.js"
import { pgClientIn, postgresSkipReason } from "../support/pg-schema.js"
import { admin, runnersFixture, waitFor } from "../support/runners.js"

// Issue 45's "lease fences strictly increase across a failover" (docs/cluster.md, "Failover"). No HTTP route and no
// `ctl` command sends the `LeaseKeeper` actor a message: `ctl lease` and every service that takes a lease (the
// reconciler, the storage handoff) call `Leases` — one conditional SQL statement each — directly. The actor is
// hosted by every runner all the same, so this test reaches it the way another member of the cluster would: the
// test process joins as a client-only member (@effect/cluster's `SocketRunner.layerClientOnly`, no shards, the
// same PostgreSQL schema), which sends each message over the runner port of whichever `ctl serve` runner holds the
// key's shard. Two runners; a lease taken and handed over (fences 1, 2); the runner holding the key's shard
// SIGKILLed; on the survivor the holder renews (same fence), another is refused while it holds, and the next holder
// gets fence 3. Proves: across the failover the keeper moved to the survivor with nothing of the lease lost, no
// second holder admitted, and every new holder's fence greater than every earlier one. Bounded: every wait has a
// limit.
const children: Array<ChildProcess> = []
const schemas: Array<string> = []

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL")
  for (const schema of schemas) await admin(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined)
})

/** A client-only member of the runners' cluster: it hosts nothing and routes each message to its shard's runner. */
const clusterClient = (schema: string) =>
  SocketRunner.layerClientOnly.pipe(
    Layer.provide([
      NodeClusterSocket.layerClientProtocol,
      Layer.orDie(SqlMessageStorage.layer),
      Layer.orDie(SqlRunnerStorage.layer)
    ]),
    Layer.provide([
      // The runners' own shard count (runnersFixture) and lock expiry (KEEL_RUNNER_LOCK_EXPIRATION's default): a
      // member counts a runner in the hash ring while its heartbeat is younger than its own expiry setting, so with
      // the cluster's default (35 s) this client kept sending to the dead runner for 35 s. The retry timings are
      // the runners' (Cluster.ts).
      ShardingConfig.layer({
        shardsPerGroup: 30,
        shardLockExpiration: "6 seconds",
        shardLockDisableAdvisory: true,
        refreshAssignmentsInterval: "1 second",
        sendRetryInterval: "200 millis",
        entityReplyPollInterval: "200 millis"
      }),
      RpcSerialization.layerMsgPack,
      pgClientIn(schema, 2)
    ])
  )

const KEY = "deploy/forge-1"
const TTL = 60_000

interface Status {
  readonly runners: ReadonlyArray<{ address: string; shards: number; entities: Record<string, number> }>
  readonly unassigned_shards: number
}

describe.skipIf(postgresSkipReason !== undefined)("LeaseKeeper across a runner's SIGKILL", () => {
  it("fences strictly increase across the failover; the holder keeps its lease; no second holder", async () => {
    const started = Date.now()
    const { schema, ctl, runner, runnerPorts, holders } = await runnersFixture(children, schemas)
    const servers = await Promise.all([runner(0), runner(1)])
    const status = async () => (await ctl(["cluster", "status"], { KEEL_CLUSTER_MODE: "runners" })) as Status
    await waitFor("every shard held by the two runners", async () => {
      const now = await status()
      return now.unassigned_shards === 0 && now.runners.filter((r) => r.shards > 0).length === 2
    })

    const cluster = ManagedRuntime.make(clusterClient(schema))
    try {
      const keeper = <A, E>(send: (client: Effect.Effect.Success<typeof LeaseKeeper.client>) => Effect.Effect<A, E>) =>
        cluster.runPromise(Effect.flatMap(LeaseKeeper.client, send))
      const acquire = (holder: string) =>
        cluster.runPromise(
          Effect.either(Effect.flatMap(LeaseKeeper.client, (c) => c(KEY).Acquire({ holder, ttlMillis: TTL })))
        )
      const take = async (holder: string) => {
        const taken = await acquire(holder)
        assert.isTrue(Either.isRight(taken), `${holder}: ${JSON.stringify(taken)}`)
        return Either.getOrThrow(taken).fence
      }
      const refused = async (holder: string) => {
        const answer = await acquire(holder)
        assert.isTrue(Either.isLeft(answer) && answer.left._tag === "LeaseHeld", `${holder}: ${JSON.stringify(answer)}`)
      }

      // Before: a holder, a refusal, a hand-over.
      const fences = [await take("holder-a")]
      await refused("holder-b")
      await keeper((c) => c(KEY).Release({ holder: "holder-a" }))
      fences.push(await take("holder-b"))

      // The runner hosting the key's LeaseKeeper, as `ctl cluster status` places it, dies.
      const before = await status()
      const host = before.runners.find((r) => r.entities.LeaseKeeper === 1)
      assert.isDefined(host, JSON.stringify(before.runners))
      const victim = runnerPorts.findIndex((port) => `127.0.0.1:${port}` === host!.address)
      const killed = servers[victim]!
      killed.child.kill("SIGKILL")
      await new Promise((resolve) => (killed.child.exitCode === null ? killed.child.once("exit", resolve) : resolve(0)))
      const killedAt = Date.now()

      // After: the holder's renewal waits for the new owner and keeps its fence; a rival is still refused.
      const renewed = await keeper((c) => c(KEY).Renew({ holder: "holder-b", ttlMillis: TTL }))
      const renewedIn = Date.now() - killedAt
      assert.strictEqual(renewed.fence, fences[1])
      await refused("holder-c")
      await keeper((c) => c(KEY).Release({ holder: "holder-b" }))
      fences.push(await take("holder-c"))

      assert.deepStrictEqual(fences, [1, 2, 3])
      const survivorAddress = `127.0.0.1:${runnerPorts[1 - victim]}`
      assert.deepStrictEqual([...(await holders())], [survivorAddress], "every shard on the survivor")
      const after = await status()
      assert.strictEqual(after.runners.find((r) => r.address === survivorAddress)?.entities.LeaseKeeper, 1)
      // The operator's front door (`ctl lease`, straight to SQL) reads the same lease.
      const lease = await ctl(["lease", "status", KEY])
      assert.deepInclude(lease, { key: KEY, holder: "holder-c", fence: 3 })
      console.log(
        `lease fences: ${fences.join(" < ")} across a SIGKILL; the holder's renewal answered ${(renewedIn / 1000).toFixed(1)} s after the kill; ${((Date.now() - started) / 1000).toFixed(1)} s in all`
      )
    } finally {
      await cluster.dispose()
    }
  }, 300_000)
})
