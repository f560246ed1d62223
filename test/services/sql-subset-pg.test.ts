import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Option } from "effect"
import pg from "pg"
import { pg as pgDialect } from "../../src/services/platform/sql/SqlDialect.js"
import {
  AllMigrations,
  AppConfigTest,
  CoinPriceSource,
  Collector,
  JobQueue,
  MarketConfig,
  marketMigrations,
  migrationsLayer,
  ObjectStore,
  ProductConfig,
  RESULTS_SQL,
  SqlObjectStoreLayer,
  SUMMARY_SQL,
  withDialect
} from "../support/keel.js"
import { pgInFreshSchema, postgresSkipReason, testDatabaseUrl, urlInSchema } from "../support/pg-schema.js"

/**
 * The repositories' SQL that issue 44 moved to the common subset, run on PostgreSQL (docs/database.md, "SQL both
 * engines read"): through the services where they run without the synchronous hot path, else as the services' own
 * texts. Each test migrates a fresh schema of its own with Keel's migrations. Skipped only when there is no
 * PostgreSQL (KEEL_TEST_DATABASE_URL unset and nothing answering on 127.0.0.1:5432: test/support/pg-schema.ts).
 */
const PgMigrated = migrationsLayer(AllMigrations).pipe(Layer.provideMerge(withDialect(pgInFreshSchema)))
const Settings = Layer.mergeAll(
  AppConfigTest(),
  Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["KEEL_COLLECT_SITES", "site"]])))
)
const Services = Layer.mergeAll(
  JobQueue.Default,
  Collector.Default.pipe(Layer.provide(ProductConfig.Default)),
  SqlObjectStoreLayer,
  CoinPriceSource.AdminSet.pipe(Layer.provide(MarketConfig.Default))
).pipe(Layer.provideMerge(PgMigrated), Layer.provideMerge(Settings))

describe.skipIf(postgresSkipReason !== undefined)("the common SQL subset on PostgreSQL", () => {
  it.effect("job claims: oldest first, paused targets skipped, each job claimed once by 8 concurrent workers", () =>
    Effect.gen(function* () {
      const queue = yield* JobQueue
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO queue_control (key, value) VALUES ('paused:held', 'true')`
      yield* queue.submit({ kind: "k", target: "held", argv: ["held"] })
      for (let i = 0; i < 40; i++) yield* queue.submit({ kind: "k", target: `t${i % 4}`, argv: [String(i)] })
      // Another session is claiming the oldest job (its row is locked, not yet committed): a claim skips it at
      // once for the next one, rather than waiting for that session and then finding nothing.
      const [here] = yield* sql<{ schema: string }>`SELECT current_schema() AS schema`
      const other = new pg.Client({ connectionString: urlInSchema(testDatabaseUrl, here!.schema) })
      yield* Effect.promise(async () => {
        await other.connect()
        await other.query("BEGIN")
        await other.query(`SELECT id FROM jobs WHERE argv = '["0"]' FOR UPDATE`)
      })
      // Disconnected: a claim stuck on the lock fails this test at the bound instead of holding it until the lock goes.
      const first = yield* Effect.disconnect(queue.claim("w-first", 60_000)).pipe(
        Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error("the claim waited for a locked row") }),
        Effect.ensuring(Effect.promise(() => other.query("ROLLBACK").then(() => other.end())))
      )
      assert.deepStrictEqual(
        Option.map(first, (job) => job.argv),
        Option.some(["1"])
      )
      const claims = yield* Effect.all(
        Array.from({ length: 8 }, (_, w) =>
          Effect.iterate([] as Array<string>, {
            while: (mine) => mine.length < 40,
            body: (mine) =>
              Effect.map(queue.claim(`w${w}`, 60_000), (job) =>
                Option.isSome(job) ? [...mine, job.value.id] : [...mine, ...Array(40).fill("")]
              )
          })
        ),
        { concurrency: "unbounded" }
      )
      const ids = [...claims.flat().filter((id) => id !== ""), Option.getOrThrow(first).id]
      assert.strictEqual(ids.length, 40)
      assert.strictEqual(new Set(ids).size, 40)
      const usage = yield* queue.usage(0)
      assert.strictEqual(usage.get("t0")?.running, 10)
      assert.isFalse(usage.has("held"))
    }).pipe(Effect.provide(Services))
  )

  it.effect("object listing by prefix: a range, case-sensitive, % and _ as themselves", () =>
    Effect.gen(function* () {
      const store = yield* ObjectStore
      for (const key of ["Case/A", "case/b", "case/é", "case%/c", "cas/d", "caseX/e"])
        yield* store.put(key, new TextEncoder().encode(key))
      const keys = (prefix: string, page?: { after?: string; limit?: number }) =>
        Effect.map(store.list(prefix, page), (heads) => heads.map((h) => h.key))
      assert.deepStrictEqual(yield* keys("case/"), ["case/b", "case/é"])
      assert.deepStrictEqual(yield* keys("Case/"), ["Case/A"])
      assert.deepStrictEqual(yield* keys("case%"), ["case%/c"])
      assert.deepStrictEqual(yield* keys("cas_"), [])
      assert.deepStrictEqual(yield* keys("case", { after: "case%/c", limit: 2 }), ["case/b", "case/é"])
    }).pipe(Effect.provide(Services))
  )

  it.effect("collector insert and every readout statement, counts read as numbers", () =>
    Effect.gen(function* () {
      const collector = yield* Collector
      const sql = yield* SqlClient.SqlClient
      const event = (id: string, visitor: string, at: number, extra: object = {}) => ({
        event_id: id,
        name: "pageview",
        timestamp: at,
        visitor_id: visitor,
        url: "https://keel.dev/pricing?x#y",
        ...extra
      })
      const DAY = 86_400_000
      const batch = JSON.stringify({
        site_id: "site",
        events: [
          event("e1", "v1", DAY, { referrer: "https://www.google.com/", utm: { source: "hn" } }),
          event("e2", "v2", DAY + 1),
          { ...event("e3", "v1", 2 * DAY), name: "signup" },
          event("e1", "v1", DAY)
        ]
      })
      // Outside a transaction the group commit opens SQLite's BEGIN IMMEDIATE (the hot path's change); inside
      // one, it is a savepoint of it, which PostgreSQL runs.
      const result = yield* collector.collect("web", batch).pipe(sql.withTransaction)
      assert.deepStrictEqual([result.accepted, result.duplicates], [3, 1])
      const stored = yield* sql<{ page: string; utm_source: string | null }>`SELECT page, utm_source
        FROM analytics_events WHERE event_id = 'e1'`
      assert.deepStrictEqual(stored, [{ page: "/pricing", utm_source: "hn" }])
      const run = (text: string, params: ReadonlyArray<string | number>) =>
        sql.unsafe<Record<string, unknown>>(pgDialect.text(text), [...params])
      const range = ["site", 0, 30 * DAY] as const
      const [totals] = yield* run(SUMMARY_SQL.totals, range)
      assert.deepStrictEqual([totals!.visitors, totals!.pageviews, totals!.events].map(Number), [2, 2, 3])
      // A 30-day bucket is past int4: the width is cast to BIGINT.
      const series = yield* run(SUMMARY_SQL.series, [30 * DAY, 30 * DAY, ...range])
      assert.deepStrictEqual(
        series.map((row) => [row.bucket, row.visitors, row.pageviews, row.events].map(Number)),
        [[0, 2, 2, 3]]
      )
      const pages = yield* run(SUMMARY_SQL.pages, [...range, 10])
      assert.deepStrictEqual(
        pages.map((row) => [row.page, Number(row.pageviews)]),
        [["/pricing", 2]]
      )
      const referrers = yield* run(SUMMARY_SQL.referrers, [...range, 10])
      assert.deepStrictEqual(
        referrers.map((row) => [row.referrer, Number(row.pageviews)]),
        [["google.com", 1]]
      )
      const utm = yield* run(SUMMARY_SQL.utmSources, [...range, 10])
      assert.deepStrictEqual(
        utm.map((row) => [row.utm_source, Number(row.visitors)]),
        [["hn", 1]]
      )
      yield* sql`INSERT INTO experiment_exposures VALUES ('x', 'v1', 'control', ${DAY}, ${DAY}, 2),
        ('x', 'v2', 'treatment', ${DAY}, ${DAY}, 1)`
      const results = yield* run(RESULTS_SQL, ["signup", 30 * DAY, "x", 0, 30 * DAY])
      assert.deepStrictEqual(
        results
          .map((row) => [row.variant, ...[row.subjects, row.exposures, row.conversions].map(Number)])
          .sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
        [
          ["control", 1, 2, 1],
          ["treatment", 1, 1, 0]
        ]
      )
    }).pipe(Effect.provide(Services))
  )

  it.effect("coin prices: market 0005 gives existing rows ids in order; new rows get the next", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const source = yield* CoinPriceSource
      // Back to the table as market 0004 left it, with two points of one millisecond, then 0005 again.
      yield* sql`ALTER TABLE market_coin_prices DROP COLUMN id`
      yield* sql`INSERT INTO market_coin_prices (at, price, source) VALUES (5, 10, 'admin'), (5, 11, 'admin')`
      yield* marketMigrations.migrations["0005_coin_price_ids"]!
      yield* source.set(12n)
      const rows = yield* sql<{ id: string; price: string }>`SELECT id, price FROM market_coin_prices ORDER BY id`
      assert.deepStrictEqual(
        rows.map((row) => [Number(row.id), Number(row.price)]),
        [
          [1, 10],
          [2, 11],
          [3, 12]
        ]
      )
      yield* sql`INSERT INTO market_coin_prices (at, price, source) VALUES (${Number.MAX_SAFE_INTEGER}, 13, 'demo')`
      assert.strictEqual(yield* source.current, 13n)
    }).pipe(Effect.provide(Services))
  )

  it.effect("ground truth's upserts: document frequencies add up, a vector is replaced", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // The statements of Ingester.applyFrequencies and Ingester.embedMissing, as written there.
      for (const entries of [
        [
          { stem: "a", df: 1 },
          { stem: "b", df: 2 }
        ],
        [
          { stem: "a", df: 3 },
          { stem: "c", df: 1 }
        ]
      ]) {
        yield* sql`INSERT INTO gt_terms ${sql.insert(entries)}
          ON CONFLICT (stem) DO UPDATE SET df = gt_terms.df + excluded.df`
      }
      const terms = yield* sql<{ stem: string; df: string }>`SELECT stem, df FROM gt_terms ORDER BY stem`
      assert.deepStrictEqual(
        terms.map((t) => [t.stem, Number(t.df)]),
        [
          ["a", 4],
          ["b", 2],
          ["c", 1]
        ]
      )
      for (const byte of [1, 2]) {
        const rows = [{ digest: "d", model: "m", vector: new Uint8Array([byte]) }]
        yield* sql`INSERT INTO gt_vectors ${sql.insert(rows)}
          ON CONFLICT (digest, model) DO UPDATE SET vector = excluded.vector`
      }
      const vectors = yield* sql<{ vector: Uint8Array }>`SELECT vector FROM gt_vectors`
      assert.deepStrictEqual([...vectors[0]!.vector], [2])
    }).pipe(Effect.provide(Services))
  )
})
