// bench/objects.mjs: a 1 GiB object PUT through Keel's object API (`ctl serve`, fs store, a vault token),
// beside a raw node:http server doing the same work (stream to a temporary file, hash, fsync, rename), in
// one run. Prints MB/s and the server's peak resident memory for both, and the ratio. Bounded: one upload
// each, BENCH_OBJECT_MB (default 1024) MiB, at most BENCH_MAX_SECONDS (default 300) each.
import { execFileSync, spawn } from "node:child_process"
import { createHash, randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as http from "node:http"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))
const MIB = 1024 * 1024
const SIZE_MB = Number(process.env.BENCH_OBJECT_MB ?? 1024)
const MAX_SECONDS = Number(process.env.BENCH_MAX_SECONDS ?? 300)
const work = fs.mkdtempSync(path.join(os.tmpdir(), "keel-bench-objects-"))

const freePort = () =>
  new Promise((resolve) => {
    const probe = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address()
      probe.close(() => resolve(port))
    })
  })

const request = (port, options, body) =>
  new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, agent: false, ...options }, (res) => {
      const chunks = []
      res.on("data", (c) => chunks.push(c))
      res.on("end", () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString("utf8") }))
    })
    req.on("error", reject)
    req.end(body)
  })

const waitHealthy = async (port, child) => {
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`)
    const ok = await request(port, { path: "/api/health" }).then(
      (r) => r.status === 200,
      () => false
    )
    if (ok) return
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error("server did not become healthy")
}

const rssMiB = (pid) => {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8")
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024
}

/** One streamed PUT of SIZE_MB MiB (the same 1 MiB of random bytes, repeated), watching the server's RSS. */
const upload = (port, pid, url, headers) =>
  new Promise((resolve, reject) => {
    const chunk = randomBytes(MIB)
    const hash = createHash("sha256")
    let peak = rssMiB(pid)
    const before = peak
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssMiB(pid))
    }, 50)
    const started = process.hrtime.bigint()
    const deadline = setTimeout(() => req.destroy(new Error("upload over BENCH_MAX_SECONDS")), MAX_SECONDS * 1000)
    const req = http.request(
      {
        host: "127.0.0.1",
        port,
        method: "PUT",
        path: url,
        agent: false,
        headers: { ...headers, "content-type": "application/octet-stream", "content-length": SIZE_MB * MIB }
      },
      (res) => {
        const chunks = []
        res.on("data", (c) => chunks.push(c))
        res.on("end", () => {
          clearInterval(sampler)
          clearTimeout(deadline)
          peak = Math.max(peak, rssMiB(pid))
          const seconds = Number(process.hrtime.bigint() - started) / 1e9
          resolve({
            status: res.statusCode,
            answer: JSON.parse(Buffer.concat(chunks).toString("utf8")),
            seconds,
            before,
            peak,
            sha256: hash.digest("hex")
          })
        })
      }
    )
    req.on("error", reject)
    let sent = 0
    const write = () => {
      while (sent < SIZE_MB) {
        sent++
        hash.update(chunk)
        if (!req.write(chunk)) return req.once("drain", write)
      }
      req.end()
    }
    write()
  })

const report = (name, r) => {
  const mbps = SIZE_MB / r.seconds
  console.log(
    `objects PUT ${SIZE_MB} MiB  ${name.padEnd(5)} ${mbps.toFixed(0).padStart(5)} MiB/s  ${r.seconds.toFixed(1)} s  server RSS ${r.before.toFixed(0)} → peak ${r.peak.toFixed(0)} MiB  (status ${r.status}, sha256 ${r.answer.sha256 === r.sha256 ? "matches" : "DIFFERS"})`
  )
  return mbps
}

// Keel: `ctl serve` with a fresh data dir, the example registry and a vault key made for this run.
const env = {
  ...process.env,
  KEEL_DATA_DIR: path.join(work, "data"),
  KEEL_REGISTRY: path.join(root, "examples", "registry.yml"),
  KEEL_VAULT_KEY: randomBytes(32).toString("base64"),
  KEEL_LOG_LEVEL: "warning"
}
const grantFile = path.join(work, "ops-grant.json")
execFileSync(
  process.execPath,
  [
    path.join(root, "bin", "ctl.js"),
    "vault",
    "grant",
    "create",
    "--consumer",
    "ops",
    "--action",
    "object-write",
    "--out",
    grantFile
  ],
  { env, stdio: "ignore" }
)
const keelPort = await freePort()
const keel = spawn(process.execPath, [path.join(root, "bin", "ctl.js"), "serve", "--port", String(keelPort)], {
  env,
  stdio: ["ignore", "ignore", "ignore"]
})
let keelMbps
let rawMbps
try {
  await waitHealthy(keelPort, keel)
  const exchanged = await request(
    keelPort,
    { method: "POST", path: "/v1/vault/token", headers: { "content-type": "application/json" } },
    fs.readFileSync(grantFile)
  )
  const { token } = JSON.parse(exchanged.body)
  const result = await upload(keelPort, keel.pid, "/api/objects/state/bench/big.bin", {
    authorization: `Bearer ${token}`
  })
  keelMbps = report("keel", result)
} finally {
  keel.kill("SIGTERM")
}

// Baseline: raw node:http doing the same work.
const rawPort = await freePort()
const raw = spawn(process.execPath, [path.join(root, "bench", "servers", "raw-object-sink.mjs")], {
  env: { ...process.env, BENCH_PORT: String(rawPort), BENCH_OBJECT_DIR: path.join(work, "raw") },
  stdio: ["ignore", "ignore", "ignore"]
})
try {
  await waitHealthy(rawPort, raw)
  rawMbps = report("raw", await upload(rawPort, raw.pid, "/api/objects/state/bench/big.bin", {}))
} finally {
  raw.kill("SIGTERM")
}
console.log(`objects ratio keel/raw  ${(keelMbps / rawMbps).toFixed(2)}`)
fs.rmSync(work, { recursive: true, force: true })
