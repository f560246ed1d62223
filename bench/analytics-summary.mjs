// Side-by-side benchmark of the analytics readout: p50 of a 30-day GET /api/analytics/summary over a
// seeded table of BENCH_EVENTS (default 10M) events, Keel (HTTP, admin token, the Readout service) vs the
// same SQL statements run straight on better-sqlite3 against the same file.
// Seeding: one transaction, one prepared statement, rows in time order (about 1 min for 10M on 2 cores).
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import Database from "better-sqlite3"
import { SUMMARY_SQL } from "../dist/src/services/product/ReadoutSql.js"
import { cores, MAX_SECONDS, start } from "./harness.mjs"

const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000_000)
const RUNS = Number(process.env.BENCH_RUNS ?? 9)
const DAYS = 365 // the events span a year; the summary reads its last 30 days
const VISITORS = 500_000
const DAY = 86_400_000
const END = Date.UTC(2026, 0, 1)
const FROM = END - 30 * DAY
const TOKEN = "bench_admin_token_0123456789"
const SITE = "bench-site"
const deadline = Date.now() + MAX_SECONDS * 1000 * 5

const pages = Array.from({ length: 60 }, (_, i) => `/docs/page-${i}`)
const hosts = ["news.ycombinator.com", "google.com", "github.com", "twitter.com", "reddit.com", "bing.com"]
const sources = ["hn", "newsletter", "twitter", "launch", "partner"]

/** Starts Keel once on the empty data dir so its migrations create the schema, then stops it. */
const migrate = async (dir) => {
  const { child } = await start("keel.mjs", {
    KEEL_DATA_DIR: dir,
    KEEL_LOG_LEVEL: "warning",
    KEEL_DEMO_DATA: "false",
    KEEL_ADMIN_TOKENS: TOKEN
  })
  await new Promise((resolve) => {
    child.once("exit", resolve)
    child.kill("SIGTERM")
  })
}

const seed = (file) => {
  const db = new Database(file)
  db.pragma("journal_mode = WAL")
  db.pragma("synchronous = OFF")
  db.pragma("cache_size = -262144")
  // The conversions index is built once at the end (a sort) instead of row by row in random order.
  db.exec("DROP INDEX analytics_events_conversions")
  const insert = db.prepare(`INSERT INTO analytics_events (site_id, event_id, collector, name, occurred_at, visitor_id,
    url, referrer, utm, received_at, page, referrer_host, utm_source) VALUES (?, ?, 'web', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
  const t0 = Date.now()
  const step = (DAYS * DAY) / EVENTS
  let x = 12345
  const rand = (n) => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0
    return x % n
  }
  db.transaction(() => {
    for (let i = 0; i < EVENTS; i++) {
      const at = Math.floor(END - DAYS * DAY + i * step)
      const page = pages[Math.min(rand(60), rand(60))]
      const host = rand(4) === 0 ? hosts[rand(hosts.length)] : null
      const source = rand(10) === 0 ? sources[rand(sources.length)] : null
      insert.run(
        SITE,
        `e${String(i).padStart(9, "0")}`,
        rand(5) === 0 ? "signup" : "pageview",
        at,
        `v-${rand(VISITORS)}`,
        `https://bench.keel.dev${page}`,
        host === null ? null : `https://${host}/`,
        source === null ? null : JSON.stringify({ source }),
        at,
        page,
        host,
        source
      )
    }
  })()
  db.exec("CREATE INDEX analytics_events_conversions ON analytics_events (name, visitor_id, occurred_at)")
  db.exec("ANALYZE")
  db.close()
  return (Date.now() - t0) / 1000
}

const p50 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

const baseline = (file) => {
  const db = new Database(file, { readonly: true })
  db.pragma("cache_size = -65536")
  db.pragma("mmap_size = 268435456")
  const statements = Object.fromEntries(Object.entries(SUMMARY_SQL).map(([k, text]) => [k, db.prepare(text)]))
  const once = () => {
    const range = [SITE, FROM, END]
    statements.totals.all(...range)
    statements.series.all(DAY, DAY, ...range)
    statements.pages.all(...range, 10)
    statements.referrers.all(...range, 10)
    statements.utmSources.all(...range, 10)
  }
  once()
  const times = []
  for (let i = 0; i < RUNS && Date.now() < deadline; i++) {
    const t0 = process.hrtime.bigint()
    once()
    times.push(Number(process.hrtime.bigint() - t0) / 1e6)
  }
  db.close()
  return times
}

const get = (port, p) =>
  new Promise((resolve, reject) => {
    http
      .get({ host: "127.0.0.1", port, path: p, headers: { authorization: `Bearer ${TOKEN}` } }, (res) => {
        const chunks = []
        res.on("data", (c) => chunks.push(c))
        res.on("end", () =>
          res.statusCode === 200 ? resolve(Buffer.concat(chunks)) : reject(new Error(`status ${res.statusCode}`))
        )
      })
      .on("error", reject)
  })

const keel = async (dir) => {
  const { child, port } = await start("keel.mjs", {
    KEEL_DATA_DIR: dir,
    KEEL_LOG_LEVEL: "warning",
    KEEL_DEMO_DATA: "false",
    KEEL_ADMIN_TOKENS: TOKEN
  })
  const url = `/api/analytics/summary?site=${SITE}&from=${new Date(FROM).toISOString()}&to=${new Date(END).toISOString()}`
  try {
    const body = JSON.parse(String(await get(port, url)))
    const times = []
    for (let i = 0; i < RUNS && Date.now() < deadline; i++) {
      const t0 = process.hrtime.bigint()
      await get(port, url)
      times.push(Number(process.hrtime.bigint() - t0) / 1e6)
    }
    return { times, body }
  } finally {
    child.kill("SIGTERM")
  }
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-bench-analytics-"))
try {
  await migrate(dir)
  const file = path.join(dir, "keel.db")
  const seconds = seed(file)
  const raw = baseline(file)
  const { times, body } = await keel(dir)
  console.log(`${cores} cores; ${EVENTS} events over ${DAYS} days seeded in ${seconds.toFixed(1)} s`)
  console.log(
    `GET /api/analytics/summary, last 30 days (${body.totals.events} events, ${body.totals.visitors} visitors), interval=day`
  )
  console.log(`  baseline better-sqlite3 (same SQL)  p50 ${p50(raw).toFixed(1)} ms  (${raw.length} runs)`)
  console.log(`  keel (HTTP)                         p50 ${p50(times).toFixed(1)} ms  (${times.length} runs)`)
  console.log(`  ratio keel/baseline: ${(p50(times) / p50(raw)).toFixed(2)}x`)
} finally {
  fs.rmSync(dir, { recursive: true, force: true })
}
