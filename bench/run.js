// Side-by-side benchmark: GET /api/health on Keel vs a raw node:http + better-sqlite3 baseline, and the
// floor of the HTTP stacks themselves: a constant JSON answer from raw node:http, from a bare
// @effect/platform router, and from Keel's router behind its shared middleware (GET /docs).
import { CONCURRENCY, cores, line, measure } from "./harness.mjs"

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 20_000)
const get = (path) => () => ({ path })

const baseline = await measure("raw", "raw-health.mjs", {}, REQUESTS, get("/api/health"))
const keel = await measure("keel", "keel.mjs", {}, REQUESTS, get("/api/health"))
const keelLogged = await measure("keel-logged", "keel.mjs", { KEEL_LOG_LEVEL: "info" }, REQUESTS, get("/api/health"))
const rawConstant = await measure("raw-constant", "raw-constant.mjs", {}, REQUESTS, get("/constant"))
const effectConstant = await measure("effect-constant", "effect-constant.mjs", {}, REQUESTS, get("/constant"))
const keelConstant = await measure("keel-constant", "keel.mjs", {}, REQUESTS, get("/docs"))
const ratio = (a, b) => `${(a.rps / b.rps).toFixed(2)}x`

console.log(`${REQUESTS} requests each, ${CONCURRENCY} concurrent keep-alive connections, ${cores} cores`)
console.log("GET /api/health (SELECT 1)")
console.log(line("  baseline node:http+sqlite", baseline))
console.log(line("  keel (log level warning)", keel))
console.log(line("  keel (info: request log on)", keelLogged))
console.log(`  ratio keel/baseline: ${ratio(keel, baseline)} (warning), ${ratio(keelLogged, baseline)} (info)`)
console.log("a constant JSON answer: the floor of each HTTP stack")
console.log(line("  raw node:http", rawConstant))
console.log(line("  bare @effect/platform router", effectConstant))
console.log(line("  keel router + middleware (/docs)", keelConstant))
console.log(`  ratio effect/raw: ${ratio(effectConstant, rawConstant)}, keel/raw: ${ratio(keelConstant, rawConstant)}`)
