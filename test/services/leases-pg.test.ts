import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, TestClock } from "effect"
import { AllMigrations, Leases, migrationsLayer, withDialect } from "../support/keel.js"
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
})
