// Baseline for the product bench on PostgreSQL: raw node:http + node-postgres (`pg`) sending the statements Keel's
// assigner and collector send there (src/services/product/{Assigner,Collector}.ts), each request in one BEGIN …
// COMMIT on a connection of a pool of BENCH_PG_POOL (Keel's KEEL_DATABASE_POOL): an assignment is the first
// assignment stored or the stored one returned (`INSERT … ON CONFLICT DO UPDATE … RETURNING variant`; outside the
// traffic, the stored one read) and the exposure upserted; a collector batch is one multi-row insert of its events
// (duplicates skipped, the stored ones returned) and one of the first stored event of each visitor as attribution.
// Keel's product schema on PostgreSQL (src/services/product/migrations.pg.ts: the same tables and readout indexes),
// created in the database BENCH_DATABASE_URL names. No group commit: a transaction per request.
import { buckets, chooseVariant } from "keel/product"
import { pool, transaction, values } from "./pg-common.mjs"
import { experiment, hostOf, pageOf, serve } from "./raw-product-common.mjs"

await pool.query(`
  CREATE TABLE experiment_assignments (experiment_id TEXT NOT NULL, subject TEXT NOT NULL, variant TEXT NOT NULL,
    assigned_at BIGINT NOT NULL, PRIMARY KEY (experiment_id, subject));
  CREATE TABLE experiment_exposures (experiment_id TEXT NOT NULL, subject TEXT NOT NULL, variant TEXT NOT NULL,
    first_exposed_at BIGINT NOT NULL, last_exposed_at BIGINT NOT NULL, exposures BIGINT NOT NULL,
    PRIMARY KEY (experiment_id, subject));
  CREATE TABLE analytics_events (site_id TEXT NOT NULL, event_id TEXT NOT NULL, collector TEXT NOT NULL,
    name TEXT NOT NULL, occurred_at BIGINT NOT NULL, visitor_id TEXT NOT NULL, session_id TEXT, url TEXT,
    referrer TEXT, utm TEXT, props TEXT, received_at BIGINT NOT NULL, page TEXT, referrer_host TEXT,
    utm_source TEXT, PRIMARY KEY (site_id, event_id));
  CREATE INDEX analytics_events_summary ON analytics_events
    (site_id, occurred_at, name, visitor_id, page, referrer_host, utm_source);
  CREATE INDEX analytics_events_conversions ON analytics_events (name, visitor_id, occurred_at);
  CREATE TABLE analytics_attribution (site_id TEXT NOT NULL, visitor_id TEXT NOT NULL, first_event_id TEXT NOT NULL,
    first_seen_at BIGINT NOT NULL, landing_url TEXT, referrer TEXT, utm_source TEXT, utm_medium TEXT,
    utm_campaign TEXT, utm_content TEXT, utm_term TEXT, PRIMARY KEY (site_id, visitor_id));
`)

const STORE_FIRST_ASSIGNMENT = `INSERT INTO experiment_assignments (experiment_id, subject, variant, assigned_at)
  VALUES ($1, $2, $3, $4)
  ON CONFLICT (experiment_id, subject) DO UPDATE SET variant = experiment_assignments.variant
  RETURNING variant`
const STORED_ASSIGNMENT = "SELECT variant FROM experiment_assignments WHERE experiment_id = $1 AND subject = $2"
const RECORD_EXPOSURE = `INSERT INTO experiment_exposures
    (experiment_id, subject, variant, first_exposed_at, last_exposed_at, exposures)
  VALUES ($1, $2, $3, $4, $5, 1)
  ON CONFLICT (experiment_id, subject) DO UPDATE SET
    last_exposed_at = excluded.last_exposed_at,
    exposures = experiment_exposures.exposures + 1`

const EVENT_COLUMNS = `site_id, event_id, collector, name, occurred_at, visitor_id, session_id, url, referrer, utm, props,
  received_at, referrer_host, page, utm_source`
const ATTRIBUTION_COLUMNS = `site_id, visitor_id, first_event_id, first_seen_at, landing_url, referrer, utm_source,
  utm_medium, utm_campaign, utm_content, utm_term`
const insertEvents = (rows) =>
  `INSERT INTO analytics_events (${EVENT_COLUMNS}) VALUES ${values(15, rows)}
  ON CONFLICT (site_id, event_id) DO NOTHING RETURNING event_id`
const insertAttribution = (rows) =>
  `INSERT INTO analytics_attribution (${ATTRIBUTION_COLUMNS}) VALUES ${values(11, rows)}
  ON CONFLICT (site_id, visitor_id) DO NOTHING`

const NOT_IN_EXPERIMENT = { variant: null, config: {}, experimentId: null }

const assign = (subject) => {
  const now = Date.now()
  const b = buckets(experiment.id, subject)
  const hashed = b.traffic < experiment.traffic ? chooseVariant(experiment.variants, b.variant) : undefined
  return transaction(async (c) => {
    const { rows } =
      hashed === undefined
        ? await c.query(STORED_ASSIGNMENT, [experiment.id, subject])
        : await c.query(STORE_FIRST_ASSIGNMENT, [experiment.id, subject, hashed.name, now])
    const variant = experiment.variants.find((v) => v.name === rows[0]?.variant)
    if (variant === undefined) return NOT_IN_EXPERIMENT
    await c.query(RECORD_EXPOSURE, [experiment.id, subject, variant.name, now, now])
    return { variant: variant.name, config: variant.config, experimentId: experiment.id }
  })
}

const collect = (batch) => {
  const now = Date.now()
  const site = batch.site_id
  const events = batch.events
  const rows = events.flatMap((e) => [
    site,
    e.event_id,
    "web",
    e.name,
    typeof e.timestamp === "number" ? e.timestamp : Date.parse(e.timestamp),
    e.visitor_id,
    e.session_id ?? null,
    e.url ?? null,
    e.referrer ?? null,
    e.utm ? JSON.stringify(e.utm) : null,
    e.props ? JSON.stringify(e.props) : null,
    now,
    hostOf(e.referrer ?? null),
    pageOf(e.url ?? null),
    e.utm?.source || null
  ])
  return transaction(async (c) => {
    const inserted = await c.query(insertEvents(events.length), rows)
    const stored = new Set(inserted.rows.map((r) => r.event_id))
    const firstByVisitor = new Map()
    for (const e of events)
      if (stored.has(e.event_id) && !firstByVisitor.has(e.visitor_id)) firstByVisitor.set(e.visitor_id, e)
    if (firstByVisitor.size > 0)
      await c.query(
        insertAttribution(firstByVisitor.size),
        [...firstByVisitor.values()].flatMap((e) => [
          site,
          e.visitor_id,
          e.event_id,
          typeof e.timestamp === "number" ? e.timestamp : Date.parse(e.timestamp),
          e.url ?? null,
          e.referrer ?? null,
          e.utm?.source ?? null,
          e.utm?.medium ?? null,
          e.utm?.campaign ?? null,
          e.utm?.content ?? null,
          e.utm?.term ?? null
        ])
      )
    return { accepted: stored.size, duplicates: events.length - stored.size, rejected: [] }
  })
}

serve({ assign, collect })
