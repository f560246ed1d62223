import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Scope } from "effect"
import { LeaseKeeper } from "../support/keel.js"
import { leaseKeeperRuntime } from "../support/lease-keeper.js"
import { freshSchema, pgClientIn, postgresSkipReason } from "../support/pg-schema.js"

/** The production wiring (single runner, SQL runner and message storage) on one PostgreSQL schema. */
const runtimeIn = (schema: string) => leaseKeeperRuntime(pgClientIn(schema))

const acquire = (key: string, holder: string) =>
  Effect.flatMap(LeaseKeeper.client, (client) => client(key).Acquire({ holder, ttlMillis: 60_000 }))

describe.skipIf(postgresSkipReason !== undefined)("the single runner on PostgreSQL", () => {
  it.live(
    "two Keels in two schemas of one database run their actors side by side (shard locks are the schema's rows)",
    () =>
      Effect.gen(function* () {
        const [a, b] = yield* Effect.all([freshSchema, freshSchema])
        // The first Keel stays up while the second starts: with session advisory locks (the database's, not the
        // schema's) the second found every shard taken and its Acquire was never answered.
        const keelA = yield* Scope.make()
        const keelB = yield* Scope.make()
        const first = yield* acquire("k", "in-a").pipe(Effect.provide(yield* Layer.buildWithScope(runtimeIn(a), keelA)))
        const second = yield* Layer.buildWithScope(runtimeIn(b), keelB).pipe(
          Effect.flatMap((ctx) => Effect.provide(acquire("k", "in-b"), ctx)),
          Effect.timeoutFail({
            duration: "60 seconds",
            onTimeout: () => new Error("the second Keel's actor never answered")
          })
        )
        assert.strictEqual(first.holder, "in-a")
        assert.strictEqual(second.holder, "in-b")
        assert.strictEqual(first.fence, 1)
        assert.strictEqual(second.fence, 1)

        yield* Scope.close(keelB, Exit.void)
        yield* Scope.close(keelA, Exit.void)

        // A restart in the same schema takes its shard rows back at once (same runner address) and finds the lease.
        const status = yield* Effect.flatMap(LeaseKeeper.client, (client) => client("k").Status()).pipe(
          Effect.provide(runtimeIn(a)),
          Effect.timeoutFail({
            duration: "60 seconds",
            onTimeout: () => new Error("the restarted runner never answered")
          })
        )
        assert.strictEqual(status?.holder, "in-a")
      }).pipe(Effect.scoped),
    180_000
  )
})
