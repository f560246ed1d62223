// Side-by-side benchmark: GET /api/health on Keel vs a raw node:http + better-sqlite3 baseline.
import { CONCURRENCY, cores, line, measure } from "./harness.mjs"

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 20_000)
const health = () => ({ path: "/api/health" })

const baseline = await measure("raw", "raw-health.mjs", {}, REQUESTS, health)
const keel = await measure("keel", "keel.mjs", {}, REQUESTS, health)
const keelLogged = await measure("keel-logged", "keel.mjs", { KEEL_LOG_LEVEL: "info" }, REQUESTS, health)
console.log(`GET /api/health, ${REQUESTS} requests, ${CONCURRENCY} concurrent keep-alive connections, ${cores} cores`)
console.log(line("baseline node:http+sqlite", baseline))
console.log(line("keel (log level warning)", keel))
console.log(line("keel (info: request log on)", keelLogged))
console.log(
  `ratio keel/baseline throughput: ${(keel.rps / baseline.rps).toFixed(2)}x (warning), ${(keelLogged.rps / baseline.rps).toFixed(2)}x (info)`
)
