import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { DomainMigrations } from "../platform/Database.js"
import { withPostgres } from "../platform/migrations/byDialect.js"
import { productPgMigrations } from "./migrations.pg.js"
import { pageExpression, referrerHost, referrerHostExpression, utmSourceExpression } from "./ReadoutSql.js"

/** SQLite's migrations, as landed (never edited: add one). PostgreSQL's, id for id, are in migrations.pg.ts. */
const sqlite: DomainMigrations = {
  domain: "product",
  migrations: {
    "0001_create_experiment_assignments": Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // The first assignment of a subject to an experiment; it wins for ever after.
      yield* sql`CREATE TABLE experiment_assignments (
        experiment_id TEXT NOT NULL,
        subject TEXT NOT NULL,
        variant TEXT NOT NULL,
        assigned_at INTEGER NOT NULL,
        PRIMARY KEY (experiment_id, subject)
      )`
      // One row per (experiment, subject): first and last exposure and how many.
      yield* sql`CREATE TABLE experiment_exposures (
        experiment_id TEXT NOT NULL,
        subject TEXT NOT NULL,
        variant TEXT NOT NULL,
        first_exposed_at INTEGER NOT NULL,
        last_exposed_at INTEGER NOT NULL,
        exposures INTEGER NOT NULL,
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
        occurred_at INTEGER NOT NULL,
        visitor_id TEXT NOT NULL,
        session_id TEXT,
        url TEXT,
        referrer TEXT,
        utm TEXT,
        props TEXT,
        received_at INTEGER NOT NULL,
        PRIMARY KEY (site_id, event_id)
      )`
      // First touch, recorded once per visitor with the visitor's first stored event.
      yield* sql`CREATE TABLE analytics_attribution (
        site_id TEXT NOT NULL,
        visitor_id TEXT NOT NULL,
        first_event_id TEXT NOT NULL,
        first_seen_at INTEGER NOT NULL,
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
        occurred_at INTEGER NOT NULL,
        props TEXT,
        received_at INTEGER NOT NULL,
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
        published_at INTEGER,
        updated_at INTEGER NOT NULL,
        reading_time_minutes INTEGER NOT NULL,
        html TEXT NOT NULL,
        source_digest TEXT NOT NULL,
        source_file TEXT NOT NULL,
        PRIMARY KEY (surface, slug)
      )`
      yield* sql`CREATE INDEX blog_posts_listing ON blog_posts (surface, status, published_at DESC, slug)`
    }),
    "0005_analytics_readout_indexes": Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // Derived once per row, when the collector stores it (the same SQL expressions, see ReadoutSql.ts),
      // so the summary groups by plain indexed values instead of parsing URLs and JSON on every read.
      // (Plain columns, not virtual generated ones: SQLite does not read those from a covering index.)
      yield* sql`ALTER TABLE analytics_events ADD COLUMN page TEXT`
      yield* sql`ALTER TABLE analytics_events ADD COLUMN referrer_host TEXT`
      yield* sql`ALTER TABLE analytics_events ADD COLUMN utm_source TEXT`
      yield* sql.unsafe(`UPDATE analytics_events SET page = ${pageExpression("url")},
        referrer_host = ${referrerHostExpression("referrer")}, utm_source = ${utmSourceExpression("utm")}`)
      // The summary: a range of one site's events, covering every column it reads (no table lookups).
      yield* sql`CREATE INDEX analytics_events_summary ON analytics_events
        (site_id, occurred_at, name, visitor_id, page, referrer_host, utm_source)`
      // Experiment conversions: does this subject have this event at or after its first exposure?
      yield* sql`CREATE INDEX analytics_events_conversions ON analytics_events (name, visitor_id, occurred_at)`
    }),
    "0006_analytics_referrer_host_parsed": Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // 0005's SQL reading of the host took `user` from `https://user:pw@host/` and `[` from an IPv6
      // literal: recomputed with the URL parser the collector now uses, in bounded batches.
      let after = 0
      for (;;) {
        const rows = yield* sql<{ id: number; referrer: string; referrer_host: string | null }>`
          SELECT rowid AS id, referrer, referrer_host FROM analytics_events
          WHERE rowid > ${after} AND referrer IS NOT NULL ORDER BY rowid LIMIT 1000`
        if (rows.length === 0) break
        for (const row of rows) {
          const host = referrerHost(row.referrer)
          if (host !== row.referrer_host)
            yield* sql`UPDATE analytics_events SET referrer_host = ${host} WHERE rowid = ${row.id}`
        }
        after = Number(rows[rows.length - 1]!.id)
      }
    })
  }
}

export const productMigrations = withPostgres(sqlite, productPgMigrations)
