import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"

/** A domain's demo data: written once, on the first start of an empty installation. */
export interface DemoSeeder<R = never> {
  readonly domain: string
  readonly seed: Effect.Effect<void, never, R | SqlClient.SqlClient>
}

/**
 * Runs each seeder whose domain has never been seeded, recording it in `demo_seeds` in the same
 * transaction as its rows, so a restart neither duplicates nor half-writes demo data, and data an
 * operator deleted is not resurrected. The marker is claimed first (`ON CONFLICT DO NOTHING RETURNING`): two
 * processes starting together on an empty PostgreSQL database would otherwise both see no marker and both seed,
 * the second dying on a primary key; the second's claim instead waits for the first's commit and finds the row.
 */
export const seedDemoData = <R>(seeders: ReadonlyArray<DemoSeeder<R>>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const seeded: Array<string> = []
    for (const seeder of seeders) {
      const done = yield* sql<{ domain: string }>`SELECT domain FROM demo_seeds WHERE domain = ${seeder.domain}`
      if (done.length > 0) continue
      const now = yield* Clock.currentTimeMillis
      const claimed = yield* Effect.gen(function* () {
        const mine = yield* sql<{ domain: string }>`INSERT INTO demo_seeds (domain, seeded_at)
          VALUES (${seeder.domain}, ${now}) ON CONFLICT DO NOTHING RETURNING domain`
        if (mine.length > 0) yield* seeder.seed
        return mine.length > 0
      }).pipe(sql.withTransaction)
      if (claimed) seeded.push(seeder.domain)
    }
    if (seeded.length > 0)
      yield* Effect.logInfo("demo data seeded").pipe(Effect.annotateLogs("domains", seeded.join(",")))
    return seeded
  }).pipe(Effect.orDie)
