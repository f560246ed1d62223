import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { pageExpression, referrerHost, referrerHostExpression } from "./ReadoutSql.js"

/**
 * SQLite's `instr(a, b)` is PostgreSQL's `strpos(a, b)` (1-based, 0 when absent); the rest of ReadoutSql's
 * expressions (substr with a start ≥ 1 and a length ≥ 0, replace, lower, LIKE on a lower-cased value, nullif,
 * coalesce) means the same on both, so 0005's backfill is the same SQL with that one function renamed.
 */
const onPostgres = (expression: string) => expression.replaceAll("instr(", "strpos(")

/**
 * `utm.source` as SQLite's `CASE WHEN json_valid(utm) THEN nullif(json_extract(utm, '$.source'), '') END` reads
 * it (PostgreSQL 15 has no test for valid JSON short of a cast that aborts the transaction): null unless the
 * text is JSON with a non-empty `source`; a number or boolean as SQLite stores it in a TEXT column.
 */
const utmSourceOfJson = (utm: string): string | null => {
  let parsed: unknown
  try {
    parsed = JSON.parse(utm)
  } catch {
    return null
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return null
  const source = (parsed as Record<string, unknown>).source
  if (source === undefined || source === null || source === "") return null
  if (typeof source === "boolean") return source ? "1" : "0"
  return typeof source === "object" ? JSON.stringify(source) : String(source)
}

/**
 * Sets `target` to `derive(source)` wherever `source` is set and the value differs, in pages of 1000 by the
 * primary key (PostgreSQL has no `rowid`; SQLite's 0006 pages by it).
 */
const recompute = (
  source: "utm" | "referrer",
  target: "utm_source" | "referrer_host",
  derive: (value: string) => string | null
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    let after: { readonly site_id: string; readonly event_id: string } | undefined
    for (;;) {
      const from = after === undefined ? sql`TRUE` : sql`(site_id, event_id) > (${after.site_id}, ${after.event_id})`
      const rows = yield* sql<{ site_id: string; event_id: string; value: string; current: string | null }>`
        SELECT site_id, event_id, ${sql(source)} AS value, ${sql(target)} AS current FROM analytics_events
        WHERE ${from} AND ${sql(source)} IS NOT NULL ORDER BY site_id, event_id LIMIT 1000`
      if (rows.length === 0) return
      for (const row of rows) {
        const value = derive(row.value)
        if (value !== row.current)
          yield* sql`UPDATE analytics_events SET ${sql(target)} = ${value}
            WHERE site_id = ${row.site_id} AND event_id = ${row.event_id}`
      }
      after = rows[rows.length - 1]!
    }
  })

/** The product's migrations on PostgreSQL, id for id with migrations.ts: BIGINT for every time and count. */
export const productPgMigrations = {
  "0001_create_experiment_assignments": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE experiment_assignments (
      experiment_id TEXT NOT NULL,
      subject TEXT NOT NULL,
      variant TEXT NOT NULL,
      assigned_at BIGINT NOT NULL,
      PRIMARY KEY (experiment_id, subject)
    )`
    yield* sql`CREATE TABLE experiment_exposures (
      experiment_id TEXT NOT NULL,
      subject TEXT NOT NULL,
      variant TEXT NOT NULL,
      first_exposed_at BIGINT NOT NULL,
      last_exposed_at BIGINT NOT NULL,
      exposures BIGINT NOT NULL,
      PRIMARY KEY (experiment_id, subject)
    )`
  }),
  "0002_create_analytics": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE analytics_events (
      site_id TEXT NOT NULL,
      event_id TEXT NOT NULL,
      collector TEXT NOT NULL,
      name TEXT NOT NULL,
      occurred_at BIGINT NOT NULL,
      visitor_id TEXT NOT NULL,
      session_id TEXT,
      url TEXT,
      referrer TEXT,
      utm TEXT,
      props TEXT,
      received_at BIGINT NOT NULL,
      PRIMARY KEY (site_id, event_id)
    )`
    yield* sql`CREATE TABLE analytics_attribution (
      site_id TEXT NOT NULL,
      visitor_id TEXT NOT NULL,
      first_event_id TEXT NOT NULL,
      first_seen_at BIGINT NOT NULL,
      landing_url TEXT,
      referrer TEXT,
      utm_source TEXT,
      utm_medium TEXT,
      utm_campaign TEXT,
      utm_content TEXT,
      utm_term TEXT,
      PRIMARY KEY (site_id, visitor_id)
    )`
  }),
  "0003_create_onboarding_events": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE onboarding_events (
      app_id TEXT NOT NULL,
      event_id TEXT NOT NULL,
      subject TEXT NOT NULL,
      step TEXT NOT NULL,
      occurred_at BIGINT NOT NULL,
      props TEXT,
      received_at BIGINT NOT NULL,
      PRIMARY KEY (app_id, event_id)
    )`
  }),
  "0004_create_blog_posts": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE blog_posts (
      surface TEXT NOT NULL,
      slug TEXT NOT NULL,
      title TEXT NOT NULL,
      excerpt TEXT NOT NULL,
      cover_image TEXT,
      tags TEXT NOT NULL,
      status TEXT NOT NULL,
      published_at BIGINT,
      updated_at BIGINT NOT NULL,
      reading_time_minutes BIGINT NOT NULL,
      html TEXT NOT NULL,
      source_digest TEXT NOT NULL,
      source_file TEXT NOT NULL,
      PRIMARY KEY (surface, slug)
    )`
    yield* sql`CREATE INDEX blog_posts_listing ON blog_posts (surface, status, published_at DESC, slug)`
  }),
  "0005_analytics_readout_indexes": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`ALTER TABLE analytics_events ADD COLUMN page TEXT`
    yield* sql`ALTER TABLE analytics_events ADD COLUMN referrer_host TEXT`
    yield* sql`ALTER TABLE analytics_events ADD COLUMN utm_source TEXT`
    yield* sql.unsafe(`UPDATE analytics_events SET page = ${onPostgres(pageExpression("url"))},
      referrer_host = ${onPostgres(referrerHostExpression("referrer"))}`)
    yield* recompute("utm", "utm_source", utmSourceOfJson)
    yield* sql`CREATE INDEX analytics_events_summary ON analytics_events
      (site_id, occurred_at, name, visitor_id, page, referrer_host, utm_source)`
    yield* sql`CREATE INDEX analytics_events_conversions ON analytics_events (name, visitor_id, occurred_at)`
  }),
  "0006_analytics_referrer_host_parsed": recompute("referrer", "referrer_host", referrerHost)
}
