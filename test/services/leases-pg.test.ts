import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Option, TestClock } from "effect"
import {
  AllMigrations,
  Leases,
  migrationsLayer,
  STORAGE_FENCE_KEY,
  StorageFence,
  StorageFenceLive,
  withDialect
} from "../support/keel.js"
import { freshSchema, pgClientIn, postgresSkipReason } from "../support/pg-schema.js"

/**
 * Leases on PostgreSQL decide by the database's clock (docs/database.md, "Concurrency on PostgreSQL"): two
 * runners (two pools on one schema) whose own clocks disagree by hours still agree on the holder. Skipped only
 * when there is no PostgreSQL (test/support/pg-schema.ts).
 */
const leasesIn = (schema: string, migrate: boolean) => {
  const client = withDialect(pgClientIn(schema, 2))
  const database = migrate ? migrationsLayer(AllMigrations).pipe(Layer.provideMerge(client)) : client
  return Layer.build(Leases.Default.pipe(Layer.provide(database))).pipe(Effect.map(Context.get(Leases)))
}

/** The storage-write fence of a runner on `schema` (migrated by another). */
const fenceIn = (schema: string) =>
  Layer.build(StorageFenceLive.pipe(Layer.provide(withDialect(pgClientIn(schema, 1))))).pipe(
    Effect.map(Context.get(StorageFence))
  )

describe.skipIf(postgresSkipReason !== undefined)("leases, two runners with skewed clocks on one PostgreSQL", () => {
  it.scoped("a runner whose clock is two hours ahead cannot take a live lease; the holder renews it", () =>
    Effect.gen(function* () {
      const schema = yield* freshSchema
      const behind = yield* leasesIn(schema, true)
      const ahead = yield* leasesIn(schema, false)
      const held = yield* behind.acquire("janitor", "runner-a", "60 seconds")
      // The test clock (both runners' process clock) moves two hours: past the lease by the process clock.
      yield* TestClock.adjust("2 hours")
      const refused = yield* Effect.flip(ahead.acquire("janitor", "runner-b", "60 seconds"))
      assert.strictEqual(refused._tag, "LeaseHeld")
      const renewed = yield* behind.renew("janitor", "runner-a", "60 seconds")
      assert.strictEqual(renewed.fence, held.fence)
      assert.isAtLeast(renewed.expiresAt, held.expiresAt)
    })
  )

  it.scoped(
    "the storage-write fence is read by the database's clock: held for a runner hours ahead, released for one behind",
    () =>
      Effect.gen(function* () {
        const schema = yield* freshSchema
        const leases = yield* leasesIn(schema, true)
        const fence = yield* fenceIn(schema)
        yield* leases.acquire(STORAGE_FENCE_KEY, "handoff:t1", "60 seconds")
        // Both process clocks two hours ahead of the server: past the lease by the process clock, still held.
        yield* TestClock.adjust("2 hours")
        assert.strictEqual(Option.getOrNull(yield* fence.holder), "handoff:t1")
        yield* leases.release(STORAGE_FENCE_KEY, "handoff:t1")
        // Released at the server's now: no runner, whatever its clock says, still sees it held.
        yield* TestClock.setTime(0)
        assert.strictEqual(Option.getOrNull(yield* fence.holder), null)
      })
  )
})
