// Baseline for the product bench: raw node:http + better-sqlite3 doing the same SQL as Keel's
// assigner (sticky lookup, first assignment, exposure upsert in one transaction) and collector
// (dedup insert + first-touch attribution per event, one transaction per batch). No validation
// framework, no middleware: the floor. What both engines' baselines share (experiment, derived values, HTTP) is
// in raw-product-common.mjs.
import * as fs from "node:fs"
import * as path from "node:path"
import Database from "better-sqlite3"
import { buckets, chooseVariant } from "keel/product"
import { experiment, hostOf, pageOf, serve } from "./raw-product-common.mjs"

const dir = process.env.BENCH_DIR
fs.mkdirSync(dir, { recursive: true })
const db = new Database(path.join(dir, "raw.db"))
db.pragma("journal_mode = WAL")
db.pragma("synchronous = NORMAL") // as Keel (KEEL_SQLITE_SYNCHRONOUS=normal)
db.exec(`
  CREATE TABLE experiment_assignments (experiment_id TEXT NOT NULL, subject TEXT NOT NULL, variant TEXT NOT NULL,
    assigned_at INTEGER NOT NULL, PRIMARY KEY (experiment_id, subject));
  CREATE TABLE experiment_exposures (experiment_id TEXT NOT NULL, subject TEXT NOT NULL, variant TEXT NOT NULL,
    first_exposed_at INTEGER NOT NULL, last_exposed_at INTEGER NOT NULL, exposures INTEGER NOT NULL,
    PRIMARY KEY (experiment_id, subject));
  CREATE TABLE analytics_events (site_id TEXT NOT NULL, event_id TEXT NOT NULL, collector TEXT NOT NULL, name TEXT NOT NULL,
    occurred_at INTEGER NOT NULL, visitor_id TEXT NOT NULL, session_id TEXT, url TEXT, referrer TEXT, utm TEXT, props TEXT,
    received_at INTEGER NOT NULL, page TEXT, referrer_host TEXT, utm_source TEXT, PRIMARY KEY (site_id, event_id));
  -- The same readout indexes as Keel's schema (product migration 0005): the same storage work per event.
  CREATE INDEX analytics_events_summary ON analytics_events
    (site_id, occurred_at, name, visitor_id, page, referrer_host, utm_source);
  CREATE INDEX analytics_events_conversions ON analytics_events (name, visitor_id, occurred_at);
  CREATE TABLE analytics_attribution (site_id TEXT NOT NULL, visitor_id TEXT NOT NULL, first_event_id TEXT NOT NULL,
    first_seen_at INTEGER NOT NULL, landing_url TEXT, referrer TEXT, utm_source TEXT, utm_medium TEXT, utm_campaign TEXT,
    utm_content TEXT, utm_term TEXT, PRIMARY KEY (site_id, visitor_id));
`)
const selectStored = db.prepare("SELECT variant FROM experiment_assignments WHERE experiment_id = ? AND subject = ?")
const insertAssignment = db.prepare("INSERT INTO experiment_assignments VALUES (?, ?, ?, ?)")
const upsertExposure = db.prepare(`INSERT INTO experiment_exposures VALUES (?, ?, ?, ?, ?, 1)
  ON CONFLICT (experiment_id, subject) DO UPDATE SET last_exposed_at = excluded.last_exposed_at,
  exposures = experiment_exposures.exposures + 1`)
const assign = db.transaction((subject) => {
  const now = Date.now()
  let name = selectStored.get(experiment.id, subject)?.variant
  if (name === undefined) {
    const b = buckets(experiment.id, subject)
    if (b.traffic >= experiment.traffic) return { variant: null, config: {}, experimentId: null }
    name = chooseVariant(experiment.variants, b.variant).name
    insertAssignment.run(experiment.id, subject, name, now)
  }
  const variant = experiment.variants.find((v) => v.name === name)
  upsertExposure.run(experiment.id, subject, name, now, now)
  return { variant: name, config: variant.config, experimentId: experiment.id }
})
const insertEvent = db.prepare(`INSERT INTO analytics_events VALUES (?, ?, 'web', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (site_id, event_id) DO NOTHING RETURNING event_id`)
const insertAttribution = db.prepare(`INSERT INTO analytics_attribution VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (site_id, visitor_id) DO NOTHING`)
const collect = db.transaction((batch) => {
  const now = Date.now()
  let accepted = 0
  let duplicates = 0
  for (const e of batch.events) {
    const ts = typeof e.timestamp === "number" ? e.timestamp : Date.parse(e.timestamp)
    const row = insertEvent.get(
      batch.site_id,
      e.event_id,
      e.name,
      ts,
      e.visitor_id,
      e.session_id ?? null,
      e.url ?? null,
      e.referrer ?? null,
      e.utm ? JSON.stringify(e.utm) : null,
      e.props ? JSON.stringify(e.props) : null,
      now,
      pageOf(e.url ?? null),
      hostOf(e.referrer ?? null),
      e.utm?.source || null
    )
    if (row === undefined) {
      duplicates++
      continue
    }
    accepted++
    insertAttribution.run(
      batch.site_id,
      e.visitor_id,
      e.event_id,
      ts,
      e.url ?? null,
      e.referrer ?? null,
      e.utm?.source ?? null,
      e.utm?.medium ?? null,
      e.utm?.campaign ?? null,
      e.utm?.content ?? null,
      e.utm?.term ?? null
    )
  }
  return { accepted, duplicates, rejected: [] }
})

serve({ assign, collect })
