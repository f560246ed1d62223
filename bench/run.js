// Side-by-side benchmark: GET /api/health on Keel vs a raw node:http + better-sqlite3 baseline.
// Both servers run as child processes of this one; the load comes from here, bounded in count and time.
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const here = path.dirname(fileURLToPath(import.meta.url))
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 20_000)
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32)
const MAX_SECONDS = Number(process.env.BENCH_MAX_SECONDS ?? 60)
const WARMUP = 1_000

const freePort = () =>
  new Promise((resolve) => {
    const probe = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address()
      probe.close(() => resolve(port))
    })
  })

const healthy = (port) =>
  new Promise((resolve) => {
    http
      .get({ host: "127.0.0.1", port, path: "/api/health", agent: false }, (res) => {
        res.resume()
        resolve(res.statusCode === 200)
      })
      .on("error", () => resolve(false))
  })

/** Starts a server child on a free port and waits (at most 30 s) until it answers its health probe. */
const start = async (script, env) => {
  const port = await freePort()
  const child = spawn(process.execPath, [path.join(here, "servers", script)], {
    env: { ...process.env, ...env, BENCH_PORT: String(port), KEEL_HTTP_PORT: String(port) },
    stdio: ["ignore", "ignore", "ignore"]
  })
  const deadline = Date.now() + 30_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${script} exited with ${child.exitCode}`)
    if (await healthy(port)) return { child, port }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  child.kill("SIGKILL")
  throw new Error(`${script} did not answer /api/health within 30 s`)
}

const load = async (port, count) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY })
  const latencies = []
  let next = 0
  let failures = 0
  const deadline = Date.now() + MAX_SECONDS * 1000
  const one = () =>
    new Promise((resolve) => {
      const t0 = process.hrtime.bigint()
      const req = http.get({ host: "127.0.0.1", port, path: "/api/health", agent }, (res) => {
        res.resume()
        res.on("end", () => {
          if (res.statusCode !== 200) failures++
          latencies.push(Number(process.hrtime.bigint() - t0) / 1e6)
          resolve()
        })
      })
      req.on("error", () => {
        failures++
        resolve()
      })
    })
  const worker = async () => {
    while (next < count && Date.now() < deadline) {
      next++
      await one()
    }
  }
  const t0 = Date.now()
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))
  const seconds = (Date.now() - t0) / 1000
  agent.destroy()
  latencies.sort((a, b) => a - b)
  const pct = (p) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0
  return { done: latencies.length, failures, rps: latencies.length / seconds, p50: pct(0.5), p99: pct(0.99) }
}

const measure = async (name, script, logLevel = "warning") => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `keel-bench-${name}-`))
  const { child, port } = await start(script, {
    BENCH_DIR: dir,
    KEEL_DATA_DIR: dir,
    KEEL_LOG_LEVEL: logLevel,
    KEEL_LOG_FORMAT: "json",
    KEEL_DEMO_DATA: "false"
  })
  try {
    await load(port, WARMUP)
    return await load(port, REQUESTS)
  } finally {
    child.kill("SIGTERM")
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

const line = (name, r) =>
  `${name.padEnd(28)} ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  (${r.done} requests, ${r.failures} failures)`

const baseline = await measure("raw", "raw-health.mjs")
const keel = await measure("keel", "keel-health.mjs")
const keelLogged = await measure("keel-logged", "keel-health.mjs", "info")
console.log(
  `GET /api/health, ${REQUESTS} requests, ${CONCURRENCY} concurrent keep-alive connections, ${os.cpus().length} cores`
)
console.log(line("baseline node:http+sqlite", baseline))
console.log(line("keel (log level warning)", keel))
console.log(line("keel (info: request log on)", keelLogged))
console.log(
  `ratio keel/baseline throughput: ${(keel.rps / baseline.rps).toFixed(2)}x (warning), ${(keelLogged.rps / baseline.rps).toFixed(2)}x (info)`
)
