import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { ReleaseCatalog } from "../../src/services/fleet/control/releases/ReleaseCatalog.js"
import { AllMigrations, migrationsLayer, withDialect } from "../support/keel.js"
import { freshSchema, pgClientIn, postgresSkipReason } from "../support/pg-schema.js"

/**
 * Two processes reserving one version at once on PostgreSQL (docs/database.md, "Concurrency on PostgreSQL"): one
 * wins, the other gets the typed VersionReserved, never a primary-key defect. Skipped only when there is no
 * PostgreSQL (test/support/pg-schema.ts).
 */
const catalogIn = (schema: string, migrate: boolean) => {
  const client = withDialect(pgClientIn(schema, 4))
  const database = migrate ? migrationsLayer(AllMigrations).pipe(Layer.provideMerge(client)) : client
  return Layer.build(ReleaseCatalog.Default.pipe(Layer.provide(database))).pipe(Effect.map(Context.get(ReleaseCatalog)))
}

const VERSIONS = 20

describe.skipIf(postgresSkipReason !== undefined)("release reservations, two processes on one PostgreSQL", () => {
  it.scoped("each of 20 versions reserved at once by two revisions: one wins, the other is VERSION_RESERVED", () =>
    Effect.gen(function* () {
      const schema = yield* freshSchema
      const catalogs = [yield* catalogIn(schema, true), yield* catalogIn(schema, false)]
      const outcomes = yield* Effect.all(
        Array.from({ length: 2 * VERSIONS }, (_, i) =>
          catalogs[i % 2]!.reserve("keel", `1.0.${Math.floor(i / 2)}`, ["linux-x64"], `rev${i % 2}`).pipe(
            Effect.as("reserved"),
            Effect.catchTag("VersionReserved", (refused) => Effect.succeed(refused.code))
          )
        ),
        { concurrency: "unbounded" }
      )
      for (let v = 0; v < VERSIONS; v++)
        assert.deepStrictEqual([outcomes[2 * v], outcomes[2 * v + 1]].sort(), ["VERSION_RESERVED", "reserved"])
      const held = yield* catalogs[0]!.reservations
      assert.strictEqual(held.length, 2 * VERSIONS)
      for (let v = 0; v < VERSIONS; v++) {
        const mine = held.filter((r) => r.version === `1.0.${v}`)
        assert.strictEqual(new Set(mine.map((r) => r.revision)).size, 1)
      }
    })
  )
})
