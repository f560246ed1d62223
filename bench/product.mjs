// Side-by-side benchmark of the product-client API: assign requests/s and collector events/s
// (batches of 50) through HTTP, Keel vs raw node:http + better-sqlite3 doing the same SQL, and, in the same run,
// Keel on PostgreSQL vs raw node:http + node-postgres sending the statements Keel sends there
// (bench/servers/raw-product-pg.mjs), each server in a database of its own, dropped after
// (`--engine sqlite|postgres|both`: bench/pg.mjs).
import * as fs from "node:fs"
import * as path from "node:path"
import * as YAML from "yaml"
import { CONCURRENCY, cores, line, measure, ratioTable } from "./harness.mjs"
import { enginesOf, POOL, withDatabase } from "./pg.mjs"

const ASSIGNS = Number(process.env.BENCH_ASSIGNS ?? 10_000)
const BATCHES = Number(process.env.BENCH_BATCHES ?? 1_000)
const BATCH = 50
const SUBJECTS = 5_000 // a pool: early requests assign, later ones mostly hit stored assignments
const KEY = "pk_bench_0123456789"

const experiment = {
  id: "bench-exp",
  status: "running",
  traffic: 0.9,
  variants: [
    { name: "control", weight: 0.5, config: { headline: "A" } },
    { name: "treatment", weight: 0.5, config: { headline: "B" } }
  ]
}
const keelEnv = (dir) => {
  const file = path.join(dir, "product-registry.yml")
  fs.writeFileSync(
    file,
    YAML.stringify({
      apps: [{ app_id: "bench", client_keys: [KEY], journeys: [{ platform: "ios", surface: "home", experiment }] }]
    })
  )
  return { KEEL_PRODUCT_REGISTRY: file, KEEL_COLLECT_SITES: "bench-site", KEEL_COLLECT_WEB_BODY_LIMIT: "1048576" }
}
const rawEnv = { BENCH_EXPERIMENT: JSON.stringify(experiment) }

const assign = (i) => ({
  path: `/api/experiments/assign?app_id=bench&platform=ios&surface=home&subject=subject-${(i * 7919) % SUBJECTS}`,
  headers: { "x-client-key": KEY }
})
const collect = (i) => ({
  method: "POST",
  path: "/api/analytics/web/collect",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({
    site_id: "bench-site",
    events: Array.from({ length: BATCH }, (_, j) => ({
      event_id: `e-${i}-${j}`,
      name: "pageview",
      // Events arrive in time order, as a live site sends them (one batch after another).
      timestamp: 1_790_000_000_000 + i * BATCH + j,
      visitor_id: `v-${(i * BATCH + j) % 2_000}`,
      url: "https://keel.dev/docs",
      utm: { source: "bench" },
      props: { j }
    }))
  })
})

// BENCH_KEEL_SERVER=keel-profiled.mjs BENCH_PROFILE_DIR=DIR writes a CPU profile of Keel per run.
const keelServer = process.env.BENCH_KEEL_SERVER ?? "keel.mjs"

/**
 * Keel (`side` keel) or its baseline (raw) on `engine`: SQLite (any KEEL_DATABASE_URL unset) or PostgreSQL in a
 * database of its own, dropped after the server has stopped.
 */
const measureOn = (engine, side, name, count, make, expectStatus = 200) => {
  const script = side === "keel" ? keelServer : engine === "sqlite" ? "raw-product.mjs" : "raw-product-pg.mjs"
  const env = side === "keel" ? keelEnv : () => rawEnv
  if (engine === "sqlite")
    return measure(name, script, (dir) => ({ ...env(dir), KEEL_DATABASE_URL: undefined }), count, make, expectStatus)
  return withDatabase(name, (url) =>
    measure(
      `pg-${name}`,
      script,
      (dir) => ({ ...env(dir), KEEL_DATABASE_URL: url, BENCH_DATABASE_URL: url, BENCH_PG_POOL: String(POOL) }),
      count,
      make,
      expectStatus,
      { postgres: true }
    )
  )
}

const { engines, note } = await enginesOf()
console.error(note)
const runs = []
for (const engine of engines) {
  const rawAssign = await measureOn(engine, "raw", "raw-assign", ASSIGNS, assign)
  const keelAssign = await measureOn(engine, "keel", "keel-assign", ASSIGNS, assign)
  const rawCollect = await measureOn(engine, "raw", "raw-collect", BATCHES, collect, 202)
  const keelCollect = await measureOn(engine, "keel", "keel-collect", BATCHES, collect, 202)
  runs.push({ engine, rawAssign, keelAssign, rawCollect, keelCollect })
}

// The floors: the same requests answered with a constant body (the collector's body read first).
const floorAssignRaw = await measure("floor-raw-assign", "raw-constant.mjs", {}, ASSIGNS, assign)
const floorAssignEffect = await measure("floor-effect-assign", "effect-constant.mjs", {}, ASSIGNS, assign)
const floorCollectRaw = await measure("floor-raw-collect", "raw-constant.mjs", {}, BATCHES, collect, 202)
const floorCollectEffect = await measure("floor-effect-collect", "effect-constant.mjs", {}, BATCHES, collect, 202)
const perRequest = (r) => `${(1e6 / r.rps).toFixed(0)} µs`
const cpu = (r) =>
  r.cpuMicros === undefined
    ? "n/a"
    : `${r.cpuMicros.toFixed(0)} µs${r.dbCpuMicros === undefined ? "" : ` + PostgreSQL ${r.dbCpuMicros.toFixed(0)} µs`}`
const timeLine = (keel, raw, floorEffect, floorRaw) =>
  `  time per request: keel ${perRequest(keel)}, baseline ${perRequest(raw)}; floors: @effect/platform ${perRequest(floorEffect)}, node:http ${perRequest(floorRaw)}\n` +
  `  server CPU per request: keel ${cpu(keel)}, baseline ${cpu(raw)}; floors: @effect/platform ${cpu(floorEffect)}, node:http ${cpu(floorRaw)}`

console.log(`${CONCURRENCY} concurrent keep-alive connections, ${cores} cores`)
console.log(note)
for (const { engine, rawAssign, keelAssign, rawCollect, keelCollect } of runs) {
  // SQLite's lines as they were before PostgreSQL was measured; PostgreSQL's say so in their titles.
  const on = engine === "sqlite" ? "" : " on PostgreSQL"
  const baseline = engine === "sqlite" ? "  baseline node:http+sqlite" : "  baseline node:http+pg"
  console.log(`GET /api/experiments/assign${on} (${ASSIGNS} requests over ${SUBJECTS} subjects)`)
  console.log(line(baseline, rawAssign))
  console.log(line("  keel", keelAssign))
  console.log(line("  floor: bare @effect/platform", floorAssignEffect))
  console.log(line("  floor: raw node:http", floorAssignRaw))
  console.log(`  ratio keel/baseline: ${(keelAssign.rps / rawAssign.rps).toFixed(2)}x`)
  console.log(timeLine(keelAssign, rawAssign, floorAssignEffect, floorAssignRaw))
  console.log(`POST /api/analytics/web/collect${on} (${BATCHES} batches of ${BATCH} events)`)
  console.log(line(baseline, rawCollect, "events/s", BATCH))
  console.log(line("  keel", keelCollect, "events/s", BATCH))
  console.log(line("  floor: bare @effect/platform", floorCollectEffect, "events/s", BATCH))
  console.log(line("  floor: raw node:http", floorCollectRaw, "events/s", BATCH))
  console.log(`  ratio keel/baseline: ${(keelCollect.rps / rawCollect.rps).toFixed(2)}x`)
  console.log(timeLine(keelCollect, rawCollect, floorCollectEffect, floorCollectRaw).replace("request", "batch"))
}
console.log(
  ratioTable(
    runs.flatMap(({ engine, rawAssign, keelAssign, rawCollect, keelCollect }) => [
      { engine, workload: "GET /api/experiments/assign", keel: keelAssign.rps, baseline: rawAssign.rps, unit: "req/s" },
      {
        engine,
        workload: "POST /api/analytics/web/collect",
        keel: keelCollect.rps * BATCH,
        baseline: rawCollect.rps * BATCH,
        unit: "events/s"
      }
    ])
  )
)
