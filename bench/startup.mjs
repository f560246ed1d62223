// Side-by-side start-up: `ctl --version` and `ctl <group> --help` against a bare, unbundled @effect/cli program
// (bench/servers/bare-cli.mjs) in the same run, interleaved so both see the same load; then `ctl serve` on an
// existing data dir, from spawn to its first /api/health answer.
// usage: npm run bench:startup   (BENCH_RUNS=N runs of each, default 9; every process bounded by 60 s)
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { freePort, healthy } from "./harness.mjs"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const RUNS = Number(process.env.BENCH_RUNS ?? 9)
const BOUND_MS = 60_000
const TARGET_RATIO = 0.35
const TARGET_SERVE_S = 1.5

const ctl = path.join(root, "bin", "ctl.js")
const bare = path.join(root, "bench", "servers", "bare-cli.mjs")
const env = { ...process.env, KEEL_LOG_LEVEL: "warning" }

/** Wall time of one bounded process, in seconds; a failure or a timeout ends the bench. */
const timed = (args) => {
  const started = process.hrtime.bigint()
  const run = spawnSync(process.execPath, args, { env, stdio: ["ignore", "ignore", "pipe"], timeout: BOUND_MS })
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  if (run.status !== 0) throw new Error(`${args.join(" ")} exited ${run.status ?? run.signal}: ${run.stderr}`)
  return seconds
}

const median = (xs) => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}
const seconds = (x) => `${x.toFixed(3)} s`

const cases = [
  { name: "ctl --version", args: [ctl, "--version"] },
  { name: "ctl market --help", args: [ctl, "market", "--help"] },
  { name: "ctl release --help", args: [ctl, "release", "--help"] },
  { name: "ctl host --help", args: [ctl, "host", "--help"] },
  { name: "ctl fleet --help", args: [ctl, "fleet", "--help"] }
]
const baseline = { name: "bare @effect/cli --version", args: [bare, "--version"] }

// One warm-up of each (the file cache), then RUNS interleaved rounds.
for (const c of [baseline, ...cases]) timed(c.args)
const times = new Map([baseline, ...cases].map((c) => [c.name, []]))
for (let i = 0; i < RUNS; i++) for (const c of [baseline, ...cases]) times.get(c.name).push(timed(c.args))

const load = () => os.loadavg()[0].toFixed(2)
console.log(`start-up, median of ${RUNS} interleaved runs each (${os.cpus().length} cores, load average ${load()})`)
const base = median(times.get(baseline.name))
console.log(`  baseline ${baseline.name.padEnd(28)} ${seconds(base)}`)
let worst = 0
for (const c of cases) {
  const m = median(times.get(c.name))
  worst = Math.max(worst, m / base)
  console.log(`  ${c.name.padEnd(37)} ${seconds(m)}  ratio ${(m / base).toFixed(2)}x`)
}
console.log(`  worst ratio ${worst.toFixed(2)}x (target at most ${TARGET_RATIO}x)`)

// What start-up parses: the bundle files main.js imports statically (npm run build writes their map, meta.json).
const meta = JSON.parse(fs.readFileSync(path.join(root, "dist", "ctl", "meta.json"), "utf8"))
const statically = new Set()
const visit = (file) => {
  if (statically.has(file)) return
  statically.add(file)
  for (const i of meta.outputs[file].imports) if (i.kind === "import-statement" && !i.external) visit(i.path)
}
visit("dist/ctl/main.js")
const startupBytes = [...statically].reduce((sum, file) => sum + meta.outputs[file].bytes, 0)
console.log(`  ctl start-up loads ${statically.size} bundle files, ${(startupBytes / 1e6).toFixed(2)} MB of code`)

/** Seconds from spawning `ctl serve` to its first 200 on /api/health; the server is stopped after. */
const serveReady = async (dataDir) => {
  const port = await freePort()
  const started = process.hrtime.bigint()
  const child = spawn(process.execPath, [ctl, "serve", "--port", String(port)], {
    env: { ...env, KEEL_DATA_DIR: dataDir },
    stdio: ["ignore", "ignore", "ignore"]
  })
  try {
    const deadline = Date.now() + BOUND_MS
    while (Date.now() < deadline) {
      if (await healthy(port)) return Number(process.hrtime.bigint() - started) / 1e9
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    throw new Error(`ctl serve did not answer within ${BOUND_MS / 1000} s`)
  } finally {
    child.kill("SIGTERM")
    await new Promise((resolve) => child.once("exit", resolve))
  }
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-startup-"))
try {
  // The first start creates and migrates the data dir (and seeds the demo data): not what is measured.
  await serveReady(dataDir)
  const serve = []
  for (let i = 0; i < Math.min(RUNS, 5); i++) serve.push(await serveReady(dataDir))
  const m = median(serve)
  console.log(
    `  ctl serve ready on an existing data dir: ${seconds(m)} (median of ${serve.length}; target under ${TARGET_SERVE_S} s)`
  )
} finally {
  fs.rmSync(dataDir, { recursive: true, force: true })
}
