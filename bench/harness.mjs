// Shared bench harness: servers run as child processes of the bench, the load comes from the bench
// process itself over keep-alive connections, bounded in count and in time.
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { withBackendCpu } from "./pg.mjs"

const here = path.dirname(fileURLToPath(import.meta.url))
export const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32)
export const MAX_SECONDS = Number(process.env.BENCH_MAX_SECONDS ?? 60)

/** A port the kernel just handed out on loopback (free unless something takes it meanwhile). */
export const freePort = () =>
  new Promise((resolve) => {
    const probe = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address()
      probe.close(() => resolve(port))
    })
  })

/** Whether a server on this port answers 200 on /api/health. */
export const healthy = (port) =>
  new Promise((resolve) => {
    http
      .get({ host: "127.0.0.1", port, path: "/api/health", agent: false }, (res) => {
        res.resume()
        resolve(res.statusCode === 200)
      })
      .on("error", () => resolve(false))
  })

/** Starts `servers/<script>` on a free port and waits (at most 30 s) until it answers its health probe. */
export const start = async (script, env) => {
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

/**
 * Sends `count` requests made by `make(i)` ({ method, path, headers, body }) with CONCURRENCY in flight;
 * answers throughput and latency percentiles. Stops early at MAX_SECONDS.
 */
export const load = async (port, count, make, expectStatus = 200) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY })
  const latencies = []
  let next = 0
  let failures = 0
  const deadline = Date.now() + MAX_SECONDS * 1000
  const one = (i) =>
    new Promise((resolve) => {
      const { method = "GET", path: p, headers = {}, body } = make(i)
      const t0 = process.hrtime.bigint()
      const req = http.request({ host: "127.0.0.1", port, method, path: p, headers, agent }, (res) => {
        res.resume()
        res.on("end", () => {
          if (res.statusCode !== expectStatus) failures++
          latencies.push(Number(process.hrtime.bigint() - t0) / 1e6)
          resolve()
        })
      })
      req.on("error", () => {
        failures++
        resolve()
      })
      req.end(body)
    })
  const worker = async () => {
    while (next < count && Date.now() < deadline) await one(next++)
  }
  const t0 = Date.now()
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))
  const seconds = (Date.now() - t0) / 1000
  agent.destroy()
  latencies.sort((a, b) => a - b)
  const pct = (p) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0
  return { done: latencies.length, failures, rps: latencies.length / seconds, p50: pct(0.5), p99: pct(0.99) }
}

const TICKS_PER_SECOND = 100 // USER_HZ on Linux

/** CPU seconds (user + system) a process has used so far, from /proc; undefined where there is none. */
export const cpuSeconds = (pid) => {
  try {
    // The command name (field 2) may hold spaces; utime and stime are fields 14 and 15.
    const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND
  } catch {
    return undefined
  }
}

/** Stops a server and waits (at most 15 s, then SIGKILL) until it has exited: its database is then free to drop. */
export const stop = async (child) => {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once("exit", resolve))
  child.kill("SIGTERM")
  const timer = setTimeout(() => child.kill("SIGKILL"), 15_000)
  await exited
  clearTimeout(timer)
}

/**
 * Runs a server, warms it, measures, stops it, removes its data dir. Besides throughput it answers the
 * server's own CPU time per request (`cpuMicros`), which other processes on the machine disturb much less, and
 * with `options.postgres` the CPU time of the PostgreSQL backends serving it per request (`dbCpuMicros`).
 */
export const measure = async (name, script, env, count, make, expectStatus = 200, options = {}) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `keel-bench-${name}-`))
  const setup = typeof env === "function" ? env(dir) : env
  const { child, port } = await start(script, {
    BENCH_DIR: dir,
    KEEL_DATA_DIR: dir,
    KEEL_LOG_LEVEL: "warning",
    KEEL_LOG_FORMAT: "json",
    KEEL_DEMO_DATA: "false",
    ...setup
  })
  try {
    await load(port, Math.min(1000, count), (i) => make(i + 10_000_000), expectStatus)
    const measured = async () => {
      const cpuBefore = cpuSeconds(child.pid)
      const result = await load(port, count, make, expectStatus)
      const cpuAfter = cpuSeconds(child.pid)
      const cpuMicros =
        cpuBefore === undefined || cpuAfter === undefined || result.done === 0
          ? undefined
          : ((cpuAfter - cpuBefore) * 1e6) / result.done
      return { ...result, cpuMicros }
    }
    if (options.postgres !== true) return await measured()
    const { result, seconds } = await withBackendCpu(child.pid, measured)
    const dbCpuMicros = seconds === undefined || result.done === 0 ? undefined : (seconds * 1e6) / result.done
    return { ...result, dbCpuMicros }
  } finally {
    await stop(child)
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

export const line = (name, r, unit = "req/s", scale = 1) =>
  `${name.padEnd(34)} ${(r.rps * scale).toFixed(0).padStart(8)} ${unit}  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  (${r.done} requests, ${r.failures} failures)`

export const cores = os.cpus().length

const ENGINE_NAMES = { sqlite: "sqlite", postgres: "postgresql" }

/**
 * One table of a run's figures side by side: per engine and workload, Keel's figure, its baseline's on the same
 * engine (raw node:http + better-sqlite3, or + node-postgres) and the ratio keel/baseline. Rows:
 * { engine: "sqlite" | "postgres", workload, keel, baseline, unit }.
 */
export const ratioTable = (rows) => {
  const cells = rows.map((r) => [
    ENGINE_NAMES[r.engine] ?? r.engine,
    r.workload,
    `${r.keel.toFixed(0)} ${r.unit}`,
    `${r.baseline.toFixed(0)} ${r.unit}`,
    `${(r.keel / r.baseline).toFixed(2)}x`
  ])
  const header = ["engine", "workload", "keel", "baseline", "ratio"]
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)))
  const row = (c) =>
    c
      .map((text, i) => (i >= 2 ? text.padStart(widths[i]) : text.padEnd(widths[i])))
      .join("  ")
      .trimEnd()
  return [row(header), ...cells.map(row)].join("\n")
}
