import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { groundTruthMigrations } from "../../src/services/groundtruth/migrations.js"
import { marketMigrations } from "../../src/services/market/migrations.js"
import { type DomainMigrations, migrate, sqliteMemory } from "../../src/services/platform/Database.js"
import { productMigrations } from "../../src/services/product/migrations.js"
import { freshSchema, pgClientIn, postgresSkipReason } from "../support/pg-schema.js"

/**
 * What the migrations do beyond creating tables gives the same result on both engines: the backfills over rows a
 * database already had (product 0005/0006, ground truth 0002) and the API-key change counter's triggers
 * (market 0004); and PostgreSQL's search document weighs heading, content and hidden terms as FTS5's columns.
 * Skipped only when there is no PostgreSQL (KEEL_TEST_DATABASE_URL unset and nothing answering on
 * 127.0.0.1:5432: test/support/pg-schema.ts).
 */

type Program<A> = Effect.Effect<A, unknown, SqlClient.SqlClient>

/** `program` on a fresh in-memory SQLite and on a fresh PostgreSQL schema: [SQLite's result, PostgreSQL's]. */
const onBoth = <A>(program: Program<A>) =>
  Effect.all([
    program.pipe(Effect.provide(sqliteMemory)),
    Effect.flatMap(freshSchema, (schema) => program.pipe(Effect.provide(pgClientIn(schema))))
  ])

/** The domain's migrations up to and including `last`, as a database migrated before the later ones landed. */
const upTo = (set: DomainMigrations, last: number): DomainMigrations => ({
  domain: set.domain,
  migrations: Object.fromEntries(Object.entries(set.migrations).filter(([id]) => Number.parseInt(id, 10) <= last))
})

const event = (n: number, url: string | null, referrer: string | null, utm: string | null) => ({
  site_id: "site",
  event_id: `e${n}`,
  collector: "test",
  name: "pageview",
  occurred_at: 1764320000000 + n,
  visitor_id: `v${n}`,
  url,
  referrer,
  utm,
  received_at: 1764320000000 + n
})

const EVENTS = [
  event(1, "https://keel.dev/pricing?x=1#y", "https://user:pw@news.ycombinator.com/item?id=1", '{"source":"mail"}'),
  event(2, "/docs/start#intro", "https://www.Google.com/search?q=keel", '{"source":""}'),
  event(3, "", "news.ycombinator.com/x", "not json"),
  event(4, null, null, null),
  event(5, "https://keel.dev", "https://[::1]:8080/path", '{"source":5}'),
  event(6, "keel.dev/path?q", "localhost:3000/x", "[1,2]"),
  event(7, "https://keel.dev/a/b/", "", '{"medium":"cpc"}'),
  event(8, "http://x.io/?q=1", "https://a.com@b.com/", '{"source":{"a":1}}')
]

const analyticsBackfill: Program<ReadonlyArray<unknown>> = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* migrate([upTo(productMigrations, 4)])
  yield* sql`INSERT INTO analytics_events ${sql.insert(EVENTS)}`
  yield* migrate([productMigrations])
  return yield* sql`SELECT event_id, page, referrer_host, utm_source FROM analytics_events ORDER BY event_id`
})

const CHUNKS = [
  {
    repo: "keel",
    path: "docs/a.md",
    commit_sha: "c1",
    line: 1,
    end_line: 9,
    heading: "Running servers",
    content: "Configure the listening port."
  },
  {
    repo: "keel",
    path: "docs/b.md",
    commit_sha: "c1",
    line: 1,
    end_line: 4,
    heading: "Ports",
    content: "Servers listen; servers run."
  }
]

const termsBackfill: Program<ReadonlyArray<unknown>> = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* migrate([upTo(groundTruthMigrations, 1)])
  yield* sql`INSERT INTO gt_sources ${sql.insert({ name: "keel", indexed_commit: "c1", indexed_at: 1, selection: "s", chunks: 2 })}`
  yield* sql`INSERT INTO gt_chunks ${sql.insert(CHUNKS)}`
  yield* migrate([groundTruthMigrations])
  const terms = yield* sql<{ stem: string; df: number | string }>`SELECT stem, df FROM gt_terms ORDER BY stem`
  const sources = yield* sql`SELECT name, selection FROM gt_sources`
  return [terms.map((t) => `${t.stem}:${Number(t.df)}`), sources]
})

const apiKeyChanges: Program<ReadonlyArray<number>> = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* migrate([marketMigrations])
  const counter = Effect.map(sql<{ n: number | string }>`SELECT n FROM market_api_key_changes WHERE id = 1`, (rows) =>
    Number(rows[0]!.n)
  )
  const key = (id: string) => ({ id, prefix: id, hash: `h-${id}`, wallet: null, agent: null, created_at: 1 })
  const seen = [yield* counter]
  yield* sql`INSERT INTO market_api_keys ${sql.insert([key("k1"), key("k2"), key("k3")])}`
  seen.push(yield* counter)
  yield* sql`UPDATE market_api_keys SET revoked_at = 2 WHERE id IN ('k1', 'k2')`
  seen.push(yield* counter)
  yield* sql`DELETE FROM market_api_keys WHERE id = 'k3'`
  seen.push(yield* counter)
  return seen
})

describe.skipIf(postgresSkipReason !== undefined)("migrations' effects on both engines", () => {
  it.scoped("product 0005/0006 derive the same page, referrer host and UTM source from existing events", () =>
    Effect.gen(function* () {
      const [sqlite, pg] = yield* onBoth(analyticsBackfill)
      assert.deepStrictEqual(pg, sqlite)
      assert.deepStrictEqual(sqlite[0], {
        event_id: "e1",
        page: "/pricing",
        referrer_host: "news.ycombinator.com",
        utm_source: "mail"
      })
    })
  )

  it.scoped("ground truth 0002 counts the same document frequencies from existing chunks", () =>
    Effect.gen(function* () {
      const [sqlite, pg] = yield* onBoth(termsBackfill)
      assert.deepStrictEqual(pg, sqlite)
      assert.deepStrictEqual(sqlite[1], [{ name: "keel", selection: "chunker-changed" }])
    })
  )

  it.scoped("the API-key change counter moves once per key updated or deleted, never on insert", () =>
    Effect.gen(function* () {
      const [sqlite, pg] = yield* onBoth(apiKeyChanges)
      assert.deepStrictEqual(sqlite, [0, 0, 2, 3])
      assert.deepStrictEqual(pg, sqlite)
    })
  )

  it.scoped(
    "PostgreSQL's search document weighs heading A, content B, hidden terms C, stemmed, every word kept (as FTS5)",
    () =>
      Effect.gen(function* () {
        const schema = yield* freshSchema
        const [row] = yield* Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* migrate([groundTruthMigrations])
          yield* sql`INSERT INTO gt_chunks ${sql.insert({ ...CHUNKS[0]!, terms: "daemon", digest: "d" })}`
          return yield* sql<{ a: string; b: string; c: string; ranked: boolean }>`
          SELECT strip(ts_filter(search, '{a}'))::text AS a, strip(ts_filter(search, '{b}'))::text AS b,
            strip(ts_filter(search, '{c}'))::text AS c,
            ts_rank_cd(search, to_tsquery('keel_search', 'run')) > ts_rank_cd(search, to_tsquery('keel_search', 'daemon'))
              AS ranked
          FROM gt_chunks`
        }).pipe(Effect.provide(pgClientIn(schema)))
        assert.deepStrictEqual(row, {
          a: "'run' 'server'",
          b: "'configur' 'listen' 'port' 'the'",
          c: "'daemon'",
          ranked: true
        })
      })
  )
})
