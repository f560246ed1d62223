import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Layer } from "effect"
import { seedDemoData } from "../../src/services/platform/DemoData.js"
import { AllMigrations, migrationsLayer, withDialect } from "../support/keel.js"
import { freshSchema, pgClientIn, postgresSkipReason } from "../support/pg-schema.js"

/**
 * Two processes starting together on one empty PostgreSQL schema both run the demo seeding (docs/database.md,
 * "Concurrency on PostgreSQL"): one seeds, the other finds the claimed marker and does not die on its primary key.
 * Skipped only when there is no PostgreSQL (test/support/pg-schema.ts).
 */
describe.skipIf(postgresSkipReason !== undefined)("demo seeding, two processes on one PostgreSQL", () => {
  it.live("both seed runs succeed and the data is seeded once", () =>
    Effect.gen(function* () {
      const schema = yield* freshSchema
      const first = yield* Layer.build(
        migrationsLayer(AllMigrations).pipe(Layer.provideMerge(withDialect(pgClientIn(schema, 2))))
      )
      const second = yield* Layer.build(withDialect(pgClientIn(schema, 2)))
      const sql = yield* Effect.provide(SqlClient.SqlClient, first)
      yield* sql`CREATE TABLE demo_things (name TEXT)`
      const firstSeeding = yield* Deferred.make<void>()
      // The other session waits on a lock that involves demo_seeds (its claim on the marker the first holds).
      // Polled inside the first run's transaction, which would keep its first snapshot of the statistics: cleared.
      const otherWaits = sql`SELECT pg_stat_clear_snapshot()`.pipe(
        Effect.zipRight(sql<{ n: string }>`SELECT count(*) AS n FROM pg_stat_activity
        WHERE wait_event_type = 'Lock' AND query LIKE '%demo_seeds%' AND pid <> pg_backend_pid()`),
        Effect.map((rows) => Number(rows[0]?.n ?? 0) > 0),
        Effect.orDie
      )
      const seeder = (leader: boolean) => ({
        domain: "things",
        seed: Effect.gen(function* () {
          const inTransaction = yield* SqlClient.SqlClient
          yield* inTransaction`INSERT INTO demo_things VALUES ('a')`.pipe(Effect.orDie)
          if (!leader) return
          yield* Deferred.succeed(firstSeeding, undefined)
          // Bounded: at most 400 looks (≈ 20 s) for the second run to be held by this one's claim.
          yield* Effect.iterate(0, {
            while: (n) => n < 400,
            body: (n) =>
              Effect.flatMap(otherWaits, (waits) =>
                waits ? Effect.succeed(400) : Effect.as(Effect.sleep("50 millis"), n + 1)
              )
          })
        })
      })
      const runFirst = seedDemoData([seeder(true)]).pipe(Effect.provide(first), Effect.fork)
      const leading = yield* runFirst
      // The first run either reaches its seeding or ends (then the assertion below says how).
      yield* Effect.raceFirst(Deferred.await(firstSeeding), Effect.asVoid(leading.await))
      const runSecond = yield* seedDemoData([seeder(false)]).pipe(Effect.provide(second), Effect.fork)
      const results = [yield* leading.await, yield* runSecond.await]
      assert.deepStrictEqual(
        results.map((exit) => (exit._tag === "Success" ? exit.value : "died")),
        [["things"], []]
      )
      const rows = yield* sql<{ n: string }>`SELECT count(*) AS n FROM demo_things`
      assert.strictEqual(Number(rows[0]?.n), 1)
    }).pipe(Effect.scoped)
  )
})
