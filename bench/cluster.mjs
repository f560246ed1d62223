// Cluster bench (issue 45): real `ctl serve` processes, loaded through HTTP by a bounded closed loop of buy/sell orders
// with Idempotency-Keys, in four configurations × three ticker counts, then a failover run.
//
//   SQLite single       one `ctl serve` on its data dir's SQLite file: the BASELINE of every ratio printed
//   PostgreSQL single   one `ctl serve`, KEEL_DATABASE_URL set, single mode (the embedded runner owns every shard)
//   PostgreSQL 2 / 3    `ctl serve` processes in runners mode (docs/cluster.md) on one schema
//
// Each configuration gets a fresh data dir and, on PostgreSQL, a fresh schema of the database `keel_bench` (created if
// missing on the server of BENCH_DATABASE_URL, bench/pg.mjs), dropped at the end. Its agents, API keys and coin are
// made by bench/market-setup.mjs before the servers start. A cell (configuration × 1, 8 or 32 tickers) warms up, then
// CLIENTS clients, one wallet each, send pairs (a buy of BUY coin, then a sell of SELL tokens on the same ticker) for
// CELL seconds (at most MAX_ORDERS orders); tickers are taken round-robin, ports round-robin over every runner's HTTP
// port. Figures: trades/s (200 answers per second), p50 and p99 latency, server CPU per trade (user + sys of all the
// configuration's server processes over the cell, from /proc/PID/stat, divided by trades), on PostgreSQL the CPU of
// the backends serving them, and the machine's CPU use (all cores) during the cell.
//
// The failover run: 3 runners on PostgreSQL, 8 tickers, load for FAILOVER seconds, SIGKILL at t = 10 s of the runner
// holding the most tickers. An order whose answer is lost (connection cut) or is a 5xx is sent again with the same
// Idempotency-Key to another live port (100 ms apart, at most 40 tries). Printed: trades per second, the longest
// stall (longest order, longest single request, longest gap with no answered trade), duplicates (journal rows per
// wallet, ticker and side beyond the orders answered 200; trades beyond claimed keys: both must be 0) and
// `ctl market audit --json`.
//
//   npm run build && node bench/cluster.mjs [--quick] [--json] [--no-matrix] [--no-failover]
//
// --quick: 4 s cells and a 20 s failover run. --json: one JSON object on stdout (progress stays on stderr). Every
// child process is killed when the bench exits, fails or is interrupted; every schema it made is dropped.
import { execFile, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { defaultLaunch, fromUnits, quoteBuy, toUnits } from "keel/market"
import pg from "pg"
import { cores, cpuSeconds, freePort, stop } from "./harness.mjs"
import { DATABASE_URL, redacted, withBackendCpu } from "./pg.mjs"

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.join(here, "..")
const ctlBin = path.join(root, "bin", "ctl.js")
const args = process.argv.slice(2)
const QUICK = args.includes("--quick")
const JSON_OUT = args.includes("--json")

const CLIENTS = Number(process.env.BENCH_CLUSTER_CLIENTS ?? 16)
const CELL_SECONDS = Number(process.env.BENCH_CLUSTER_SECONDS ?? (QUICK ? 4 : 8))
const WARMUP_SECONDS = QUICK ? 1 : 2
const IDLE_SECONDS = QUICK ? 1 : 2 // the servers' CPU with no load, read once per configuration
const MAX_ORDERS = 50_000 // per cell, whatever the duration
const FAILOVER_SECONDS = QUICK ? 20 : 25
const KILL_AT_SECONDS = 10
const MAX_TRIES = 40 // per order in the failover run (one try in the cells)
const REQUEST_TIMEOUT_MS = 60_000 // a bound on a hang, not a timing claim
const TICKER_COUNTS = [1, 8, 32]
const TICKERS = Array.from({ length: 32 }, (_, i) => `CL${String(i + 1).padStart(2, "0")}`)
const FAILOVER_TICKERS = TICKERS.slice(0, 8)
const BENCH_DATABASE = process.env.BENCH_CLUSTER_DATABASE ?? "keel_bench"
const SHARDS = process.env.BENCH_CLUSTER_SHARDS // unset: Keel's default (300)
const MINT = 1_000_000 // coin per wallet
const BUY = 0.01 // coin per buy
// Tokens per sell: 85 % of what a buy gets at launch (as bench/market.mjs), so the wallet's buy just before covers it.
const SELL = fromUnits((quoteBuy(defaultLaunch, toUnits(BUY), 100n).tokensOut * 85n) / 100n)

const CONFIGS = [
  { name: "SQLite single", engine: "sqlite", runners: 1, mode: "single" },
  { name: "PostgreSQL single", engine: "postgres", runners: 1, mode: "single" },
  { name: "PostgreSQL 2 runners", engine: "postgres", runners: 2, mode: "runners" },
  { name: "PostgreSQL 3 runners", engine: "postgres", runners: 3, mode: "runners" }
]

const BASE_ENV = {
  KEEL_LOG_LEVEL: "warning",
  KEEL_LOG_FORMAT: "json",
  KEEL_DEMO_DATA: "false",
  KEEL_CLUSTER_MODE: undefined,
  KEEL_DATABASE_URL: undefined,
  KEEL_REDIS_URL: undefined,
  MARKET_RATE_LIMIT_TRADING: "100000000",
  MARKET_RATE_LIMIT_PUBLIC: "100000000",
  MARKET_RATE_LIMIT_AUTHENTICATED: "100000000",
  ...(SHARDS === undefined ? {} : { KEEL_CLUSTER_SHARDS: SHARDS })
}

const progress = (text) => console.error(`[cluster bench ${new Date().toISOString().slice(11, 19)}] ${text}`)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const now = () => performance.now()

// ---- child processes and schemas: everything this run made is undone on exit, on error and on Ctrl-C ----

const children = new Set()
const schemas = new Set()
const killChildren = () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
}
process.on("exit", killChildren)
for (const signal of ["SIGINT", "SIGTERM"])
  process.once(signal, () => {
    killChildren()
    dropSchemas().finally(() => process.exit(130))
  })

/** Runs `ctl` (or a node script) to completion, bounded; answers exit code and stdout. */
const runNode = (argv, env, timeoutMs = 120_000) =>
  new Promise((resolve, reject) => {
    const child = execFile(
      process.execPath,
      argv,
      { cwd: root, env: { ...process.env, ...env }, timeout: timeoutMs, maxBuffer: 1 << 22 },
      (error, stdout, stderr) => {
        children.delete(child)
        if (error && typeof error.code !== "number")
          reject(new Error(`${argv.join(" ")}: ${error.message}\n${stderr.slice(0, 2000)}`))
        else resolve({ code: error ? error.code : 0, stdout, stderr })
      }
    )
    children.add(child)
  })

// ---- PostgreSQL: the bench database, a schema per configuration ----

const urlWith = (url, database, schema) => {
  const u = new URL(url)
  u.pathname = `/${database}`
  if (schema !== undefined) u.searchParams.set("options", `-c search_path=${schema}`)
  return u.toString()
}
const benchUrl = urlWith(DATABASE_URL, BENCH_DATABASE)

const query = async (url, text, params = []) => {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 })
  client.on("error", () => {})
  await client.connect()
  try {
    return (await client.query(text, params)).rows
  } finally {
    await client.end()
  }
}

const ensureDatabase = async () => {
  const rows = await query(DATABASE_URL, "SELECT 1 FROM pg_database WHERE datname = $1", [BENCH_DATABASE])
  if (rows.length > 0) return
  await query(DATABASE_URL, `CREATE DATABASE ${BENCH_DATABASE}`).catch((e) => {
    if (e.code !== "42P04") throw e // made meanwhile by another run
  })
}

const freshSchema = async (label) => {
  const schema = `keel_bench_${process.pid}_${label}_${randomBytes(3).toString("hex")}`
  await query(benchUrl, `CREATE SCHEMA ${schema}`)
  schemas.add(schema)
  return schema
}

const dropSchema = async (schema) => {
  await query(benchUrl, `DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  schemas.delete(schema)
}
const dropSchemas = () => Promise.allSettled([...schemas].map(dropSchema))

// ---- a deployment: set-up, servers, teardown ----

/** A GET on `path` answered 200. */
const answers200 = (port, p) =>
  new Promise((resolve) => {
    http
      .get({ host: "127.0.0.1", port, path: p, agent: false, timeout: 5_000 }, (res) => {
        res.resume()
        resolve(res.statusCode === 200)
      })
      .on("error", () => resolve(false))
      .on("timeout", function () {
        this.destroy()
      })
  })

/** `ctl serve --surface marketplace` on a free port, answering GET /api/tokens (at most 120 s). */
const serve = async (env) => {
  const port = await freePort()
  const child = spawn(process.execPath, [ctlBin, "serve", "--surface", "marketplace", "--port", String(port)], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  children.add(child)
  child.once("exit", () => children.delete(child))
  let log = ""
  const keep = (chunk) => {
    log = (log + chunk).slice(-4000)
  }
  child.stdout.on("data", keep)
  child.stderr.on("data", keep)
  const deadline = Date.now() + 120_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`ctl serve exited with ${child.exitCode}:\n${log}`)
    if (await answers200(port, "/api/tokens")) return { child, port, log: () => log }
    await sleep(200)
  }
  child.kill("SIGKILL")
  throw new Error(`ctl serve did not answer within 120 s:\n${log}`)
}

/** Polls `check` every 200 ms until it holds, at most `limitMs`. */
const waitFor = async (what, check, limitMs = 90_000) => {
  const until = Date.now() + limitMs
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`gave up waiting for ${what}`)
    await sleep(200)
  }
}

const wallets = Array.from({ length: CLIENTS }, (_, i) => `0x${(0xc1a5e000 + i).toString(16).padStart(40, "0")}`)

/**
 * Starts `config` with `tickers` launched: a fresh data dir (and schema), the set-up, then its servers (in parallel)
 * and, in runners mode, until every runner holds shards. Answers the servers, the wallets' credentials, `ctl` on the
 * deployment's database, and `close` (servers stopped, audit, schema and dir removed).
 */
const deploy = async (config, tickers) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-bench-cluster-"))
  const label = config.engine === "sqlite" ? "sqlite" : `${config.mode}${config.runners}`
  const schema = config.engine === "postgres" ? await freshSchema(label) : undefined
  const shared = {
    ...BASE_ENV,
    KEEL_VAULT_KEY: randomBytes(32).toString("base64"),
    ...(schema === undefined ? {} : { KEEL_DATABASE_URL: urlWith(DATABASE_URL, BENCH_DATABASE, schema) }),
    ...(config.mode === "runners" ? { KEEL_OBJECT_STORE: "sql" } : {})
  }
  // On SQLite the set-up writes the one server's own file; on PostgreSQL any data dir reaches the shared schema.
  const setupDir = path.join(dir, config.engine === "sqlite" ? "runner-0" : "setup")
  const ctl = (argv, env = {}) =>
    runNode([ctlBin, ...argv], { ...shared, KEEL_DATA_DIR: setupDir, ...env }).then((r) => {
      if (r.code !== 0 && r.code !== 1) throw new Error(`ctl ${argv.join(" ")} exited ${r.code}`)
      return JSON.parse(r.stdout)
    })
  const close = async () => {
    await Promise.all(servers.map((s) => stop(s.child)))
    const audit = await ctl(["market", "audit", "--json"]).catch((e) => ({ ok: false, problems: [String(e)] }))
    if (schema !== undefined) await dropSchema(schema)
    fs.rmSync(dir, { recursive: true, force: true })
    return audit
  }
  const servers = []
  try {
    const input = path.join(dir, "setup-input.json")
    const output = path.join(dir, "setup-output.json")
    fs.writeFileSync(input, JSON.stringify({ ticker: tickers[0], tickers, wallets, mint: MINT }))
    const setup = await runNode([path.join(here, "market-setup.mjs")], {
      ...shared,
      KEEL_DATA_DIR: setupDir,
      BENCH_SETUP: input,
      BENCH_SETUP_OUT: output
    })
    if (setup.code !== 0) throw new Error(`market-setup exited ${setup.code}: ${setup.stderr.slice(0, 2000)}`)
    const credentials = JSON.parse(fs.readFileSync(output, "utf8")).wallets
    const addresses = []
    const started = await Promise.all(
      Array.from({ length: config.runners }, async (_, i) => {
        const runner = config.mode === "runners" ? { address: `127.0.0.1:${await freePort()}` } : {}
        addresses[i] = runner.address
        const env = { ...shared, KEEL_DATA_DIR: path.join(dir, `runner-${i}`) }
        if (runner.address !== undefined)
          Object.assign(env, { KEEL_CLUSTER_MODE: "runners", KEEL_RUNNER_ADDRESS: runner.address })
        const server = await serve(env)
        servers.push(server)
        return { ...server, address: runner.address }
      })
    )
    if (config.mode === "runners")
      await waitFor(`shards on all ${config.runners} runners`, async () => {
        const rows = await query(
          shared.KEEL_DATABASE_URL,
          "SELECT count(DISTINCT address) AS n FROM cluster_locks WHERE address IS NOT NULL"
        )
        return Number(rows[0].n) === config.runners
      })
    return { config, schema, shared, servers: started, credentials, ctl, close, addresses }
  } catch (error) {
    await close().catch(() => undefined)
    throw error
  }
}

// ---- the load: a bounded closed loop ----

/** One POST with its Idempotency-Key: status (0 when the connection failed), replayed or not, latency. */
const post = (target, p, bearer, key, body) =>
  new Promise((resolve) => {
    const t0 = now()
    const done = (status, replayed, text) => resolve({ status, replayed, text, ms: now() - t0 })
    const req = http.request(
      {
        host: "127.0.0.1",
        port: target.port,
        method: "POST",
        path: p,
        agent: target.agent,
        timeout: REQUEST_TIMEOUT_MS,
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          authorization: `Bearer ${bearer}`,
          "idempotency-key": key
        }
      },
      (res) => {
        let text = ""
        res.setEncoding("utf8")
        res.on("data", (c) => {
          if (text.length < 2048) text += c
        })
        res.on("end", () => done(res.statusCode, res.headers["idempotent-replayed"] !== undefined, text))
        res.on("error", (e) => done(0, false, String(e)))
      }
    )
    req.on("timeout", () => req.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`)))
    req.on("error", (e) => done(0, false, String(e)))
    req.end(body)
  })

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0

/**
 * Sends orders from CLIENTS clients for `seconds` (and at most `maxOrders`) over the live targets (`dead` holds the
 * indexes not to use), each order at most `tries` times, and answers the figures. `answered` (key → order) collects
 * every order answered 200, across calls.
 */
const runLoad = async ({ targets, dead, credentials, tickers, seconds, maxOrders, tries, prefix, answered }) => {
  const s = { latencies: [], completions: [], statuses: {}, cut: 0, retries: 0, replayed: 0, unanswered: 0 }
  s.longestAttempt = 0
  let issued = 0
  let rr = 0
  let pair = 0
  const t0 = now()
  const deadline = t0 + seconds * 1000
  const pick = () => {
    for (let k = 0; k < targets.length; k++) {
      const i = rr++ % targets.length
      if (!dead.has(i)) return targets[i]
    }
    throw new Error("no live server left")
  }
  const order = async (wallet, ticker, side, key) => {
    const body = JSON.stringify({ user_id: wallet.address, amount: side === "buy" ? BUY : SELL })
    const started = now()
    for (let attempt = 0; attempt < tries; attempt++) {
      const r = await post(pick(), `/api/tokens/${ticker}/${side}`, wallet.key, key, body)
      s.longestAttempt = Math.max(s.longestAttempt, r.ms)
      if (r.status === 200) {
        s.latencies.push(now() - started)
        s.completions.push(now() - t0)
        if (r.replayed) s.replayed++
        answered.set(key, { wallet: wallet.address, ticker, side })
        return true
      }
      s.statuses[r.status] = (s.statuses[r.status] ?? 0) + 1
      s.firstError ??= `${r.status} ${r.text.slice(0, 300)}`
      if (r.status === 0) s.cut++
      if (r.status > 0 && r.status < 500) return false // refused: sending it again would not change that
      if (attempt + 1 < tries) {
        s.retries++
        await sleep(100)
      }
    }
    s.unanswered++
    return false
  }
  const client = async (c) => {
    const wallet = credentials[c]
    for (let n = 0; now() < deadline && issued < maxOrders; ) {
      const ticker = tickers[pair++ % tickers.length]
      issued += 2
      if (await order(wallet, ticker, "buy", `${prefix}-${c}-${n++}`))
        await order(wallet, ticker, "sell", `${prefix}-${c}-${n++}`)
      else n++
    }
  }
  await Promise.all(credentials.map((_, c) => client(c)))
  const elapsed = (now() - t0) / 1000
  s.latencies.sort((a, b) => a - b)
  const non200 = Object.values(s.statuses).reduce((a, b) => a + b, 0)
  return {
    ...s,
    seconds: elapsed,
    trades: s.latencies.length,
    issued,
    rps: s.latencies.length / elapsed,
    p50: percentile(s.latencies, 0.5),
    p99: percentile(s.latencies, 0.99),
    max: s.latencies.at(-1) ?? 0,
    non200
  }
}

/** The machine's busy and total jiffies over all cores, from /proc/stat. */
const hostJiffies = () => {
  try {
    const f = fs.readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number)
    const total = f.slice(0, 8).reduce((a, b) => a + b, 0)
    return { busy: total - f[3] - f[4], total }
  } catch {
    return undefined
  }
}

/** The CPU seconds of the PostgreSQL backends serving `pids` while `measured` ran (bench/pg.mjs, nested per pid). */
const withBackendsCpu = async (pids, measured) => {
  if (pids.length === 0) return { result: await measured(), seconds: 0 }
  const { result, seconds } = await withBackendCpu(pids[0], () => withBackendsCpu(pids.slice(1), measured))
  const total = seconds === undefined || result.seconds === undefined ? undefined : seconds + result.seconds
  return { result: result.result, seconds: total }
}

const targetsOf = (deployment) =>
  deployment.servers.map((s) => ({ port: s.port, agent: new http.Agent({ keepAlive: true, maxSockets: CLIENTS }) }))

/** One cell: warm-up, then the measured closed loop with CPU read around it. */
const cell = async (deployment, tickers, answered) => {
  const targets = targetsOf(deployment)
  const common = { targets, dead: new Set(), credentials: deployment.credentials, tickers, tries: 1, answered }
  const label = `${deployment.config.mode}${deployment.config.runners}-${tickers.length}`
  await runLoad({ ...common, seconds: WARMUP_SECONDS, maxOrders: MAX_ORDERS, prefix: `${label}-warm` })
  const pids = deployment.servers.map((s) => s.child.pid)
  const cpuOf = () => pids.reduce((sum, pid) => sum + (cpuSeconds(pid) ?? Number.NaN), 0)
  const hostBefore = hostJiffies()
  const cpuBefore = cpuOf()
  const measured = () => runLoad({ ...common, seconds: CELL_SECONDS, maxOrders: MAX_ORDERS, prefix: label })
  const { result, seconds: dbSeconds } =
    deployment.config.engine === "postgres"
      ? await withBackendsCpu(pids, measured)
      : { result: await measured(), seconds: undefined }
  const cpuAfter = cpuOf()
  const hostAfter = hostJiffies()
  for (const t of targets) t.agent.destroy()
  const perTrade = (secs) =>
    secs === undefined || Number.isNaN(secs) || result.trades === 0 ? undefined : (secs * 1e6) / result.trades
  return {
    config: deployment.config.name,
    tickers: tickers.length,
    trades: result.trades,
    seconds: result.seconds,
    rps: result.rps,
    p50: result.p50,
    p99: result.p99,
    non200: result.non200,
    statuses: result.statuses,
    firstError: result.firstError,
    serverCpuMicros: perTrade(cpuAfter - cpuBefore),
    dbCpuMicros: perTrade(dbSeconds),
    hostCpu:
      hostBefore === undefined || hostAfter === undefined
        ? undefined
        : (hostAfter.busy - hostBefore.busy) / (hostAfter.total - hostBefore.total)
  }
}

/** The servers' CPU with no load (heartbeats, shard lock refreshes, polls), as a share of one core over IDLE_SECONDS. */
const idleCpu = async (deployment) => {
  const pids = deployment.servers.map((s) => s.child.pid)
  const cpuOf = () => pids.reduce((sum, pid) => sum + (cpuSeconds(pid) ?? Number.NaN), 0)
  const before = cpuOf()
  const t0 = now()
  await sleep(IDLE_SECONDS * 1000)
  const share = (cpuOf() - before) / ((now() - t0) / 1000)
  return { idleCoreShare: Number.isNaN(share) ? undefined : share }
}

/** The matrix: each configuration started once, its three cells run on it, then stopped and audited. */
const matrix = async () => {
  const cells = []
  const audits = []
  const idles = []
  for (const config of CONFIGS) {
    const t0 = Date.now()
    const deployment = await deploy(config, TICKERS)
    progress(`${config.name}: up in ${((Date.now() - t0) / 1000).toFixed(1)} s (set-up and start)`)
    idles.push({ config: config.name, ...(await idleCpu(deployment)) })
    let audit
    try {
      const answered = new Map()
      for (const count of TICKER_COUNTS) {
        const c = await cell(deployment, TICKERS.slice(0, count), answered)
        progress(`${config.name}, ${count} tickers: ${c.rps.toFixed(0)} trades/s, p99 ${c.p99.toFixed(1)} ms`)
        cells.push(c)
      }
    } finally {
      audit = await deployment.close()
    }
    audits.push({ config: config.name, audit })
  }
  return { cells, audits, idles }
}

// ---- the failover run ----

/** Orders answered 200 against the journal: rows beyond the answered orders per (wallet, ticker, side), and claims. */
const journalCheck = async (url, answered) => {
  const expected = new Map()
  for (const o of answered.values()) {
    const k = `${o.wallet.toLowerCase()}|${o.ticker}|${o.side}`
    expected.set(k, (expected.get(k) ?? 0) + 1)
  }
  const rows = await query(url, "SELECT wallet, ticker, side, count(*) AS n FROM market_trades GROUP BY 1, 2, 3")
  let duplicates = 0
  let missing = 0
  let journal = 0
  const seen = new Set()
  for (const r of rows) {
    const k = `${String(r.wallet)
      .replace(/^wallet:/, "")
      .toLowerCase()}|${r.ticker}|${r.side}`
    const n = Number(r.n)
    journal += n
    seen.add(k)
    const want = expected.get(k) ?? 0
    duplicates += Math.max(0, n - want)
    missing += Math.max(0, want - n)
  }
  for (const [k, want] of expected) if (!seen.has(k)) missing += want
  const [claims] = await query(url, "SELECT count(*) AS n FROM market_idempotency WHERE response <> ''")
  const [keys] = await query(
    url,
    "SELECT count(*) AS n FROM (SELECT principal, key FROM market_idempotency GROUP BY 1, 2 HAVING count(*) > 1) k"
  )
  return {
    answered: answered.size,
    journal,
    claims: Number(claims.n),
    duplicates,
    missing,
    keysTwice: Number(keys.n),
    tradesBeyondClaims: Math.max(0, journal - Number(claims.n))
  }
}

/** The longest time with no answered trade in [0, end] ms, from completion times. */
const longestGap = (completions, end) => {
  const times = [...completions].sort((a, b) => a - b)
  let gap = { ms: 0, from: 0 }
  let last = 0
  for (const t of [...times, end]) {
    if (t - last > gap.ms) gap = { ms: t - last, from: last }
    last = t
  }
  return gap
}

const failover = async () => {
  const config = { name: "PostgreSQL 3 runners (failover)", engine: "postgres", runners: 3, mode: "runners" }
  const deployment = await deploy(config, FAILOVER_TICKERS)
  let audit
  let result
  try {
    const targets = targetsOf(deployment)
    const dead = new Set()
    const answered = new Map()
    const common = { targets, dead, credentials: deployment.credentials, tickers: FAILOVER_TICKERS, answered }
    await runLoad({ ...common, seconds: WARMUP_SECONDS, maxOrders: MAX_ORDERS, tries: MAX_TRIES, prefix: "fo-warm" })
    // The victim: the runner whose shards hold the most of the 8 tickers' actors (by `ctl cluster status`).
    const status = await deployment.ctl(["cluster", "status", "--json"], { KEEL_CLUSTER_MODE: "runners" })
    const byAddress = new Map(status.runners.map((r) => [r.address, r]))
    const held = deployment.addresses.map((a) => byAddress.get(a)?.entities?.MarketAgent ?? 0)
    const victim = held.indexOf(Math.max(...held))
    const shards = deployment.addresses.map((a) => byAddress.get(a)?.shards ?? 0)
    let killedAt
    const timer = setTimeout(() => {
      dead.add(victim)
      killedAt = now()
      deployment.servers[victim].child.kill("SIGKILL")
    }, KILL_AT_SECONDS * 1000)
    const t0 = now()
    const load = await runLoad({
      ...common,
      seconds: FAILOVER_SECONDS,
      maxOrders: MAX_ORDERS * 4,
      tries: MAX_TRIES,
      prefix: "fo"
    }).finally(() => clearTimeout(timer))
    const end = load.seconds * 1000
    const perSecond = Array.from({ length: Math.ceil(load.seconds) }, () => 0)
    for (const t of load.completions) perSecond[Math.min(perSecond.length - 1, Math.floor(t / 1000))]++
    for (const t of targets) t.agent.destroy()
    const killSecond = killedAt === undefined ? perSecond.length : Math.floor((killedAt - t0) / 1000)
    const full = perSecond.slice(0, Math.floor(load.seconds)) // the last, partial second left out of the means
    const mean = (xs) => (xs.length === 0 ? undefined : xs.reduce((a, b) => a + b, 0) / xs.length)
    const before = mean(full.slice(0, killSecond))
    const back = full.findIndex((n, i) => i > killSecond && before !== undefined && n >= before / 2)
    result = {
      beforeKill: before,
      afterRecovery: back < 0 ? undefined : mean(full.slice(back)),
      recoveredAtSecond: back < 0 ? undefined : back,
      tickers: FAILOVER_TICKERS.length,
      seconds: load.seconds,
      killAtSeconds: killedAt === undefined ? undefined : (killedAt - t0) / 1000,
      victim: { index: victim, tickers: held[victim], shards: shards[victim] },
      heldBefore: held,
      shardsBefore: shards,
      trades: load.trades,
      rps: load.rps,
      perSecond,
      p50: load.p50,
      p99: load.p99,
      longestOrderMs: load.max,
      longestAttemptMs: load.longestAttempt,
      longestGap: longestGap(load.completions, end),
      cut: load.cut,
      retries: load.retries,
      replayed: load.replayed,
      unanswered: load.unanswered,
      statuses: load.statuses,
      firstError: load.firstError
    }
    // Every server stopped before the journal is read: nothing is still committing.
    await Promise.all(deployment.servers.map((s) => stop(s.child)))
    result.journal = await journalCheck(deployment.shared.KEEL_DATABASE_URL, answered)
  } finally {
    audit = await deployment.close()
  }
  result.audit = audit
  return result
}

// ---- output ----

const fixed = (x, digits = 0) => (x === undefined ? "—" : x.toFixed(digits))

const table = (cells) => {
  const base = new Map(cells.filter((c) => c.config === CONFIGS[0].name).map((c) => [c.tickers, c]))
  const header = ["configuration", "tickers", "trades/s", "× baseline", "p50 ms", "p99 ms", "server µs/trade"]
  header.push("PostgreSQL µs/trade", "host CPU", "non-200")
  const rows = cells.map((c) => {
    const b = base.get(c.tickers)
    return [
      c.config,
      String(c.tickers),
      fixed(c.rps),
      b === undefined || b.rps === 0 ? "—" : `${(c.rps / b.rps).toFixed(2)}x`,
      fixed(c.p50, 1),
      fixed(c.p99, 1),
      fixed(c.serverCpuMicros),
      fixed(c.dbCpuMicros),
      c.hostCpu === undefined ? "—" : `${(c.hostCpu * 100).toFixed(0)} %`,
      c.non200 === 0 ? "0" : `${c.non200} ${JSON.stringify(c.statuses)}`
    ]
  })
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)))
  const line = (r) =>
    r
      .map((t, i) => (i === 0 || i === r.length - 1 ? t.padEnd(widths[i]) : t.padStart(widths[i])))
      .join("  ")
      .trimEnd()
  return [line(header), ...rows.map(line)].join("\n")
}

const auditText = (a) =>
  a.ok
    ? `ok (${a.entries} entries, coin supply ${a.coin_supply})`
    : `NOT OK: ${(a.problems ?? []).slice(0, 5).join("; ")}`

const printFailover = (f) => {
  const lines = [
    `failover: 3 runners on PostgreSQL, ${f.tickers} tickers, ${CLIENTS} clients, ${f.seconds.toFixed(1)} s of load; SIGKILL at t = ${fixed(f.killAtSeconds, 1)} s of runner ${f.victim.index} (it held ${f.victim.tickers} of the ${f.tickers} tickers' actors and ${f.victim.shards} shards; before the kill, actors per runner ${f.heldBefore.join("/")}, shards ${f.shardsBefore.join("/")})`,
    `failover trades per second (t = 0, 1, 2, … s; the last second partial): ${f.perSecond.join(" ")}`,
    `failover rate: ${fixed(f.beforeKill)} trades/s before the kill (3 runners), ${fixed(f.afterRecovery)} trades/s from t = ${f.recoveredAtSecond ?? "—"} s on (2 runners; the first second after the kill back to half the earlier rate)`,
    `failover overall: ${f.trades} trades, ${f.rps.toFixed(0)} trades/s, p50 ${f.p50.toFixed(1)} ms, p99 ${f.p99.toFixed(1)} ms`,
    `failover longest stall: longest order ${(f.longestOrderMs / 1000).toFixed(2)} s (first send to its 200, retries included), longest single request ${(f.longestAttemptMs / 1000).toFixed(2)} s, longest gap with no answered trade ${(f.longestGap.ms / 1000).toFixed(2)} s (from t = ${(f.longestGap.from / 1000).toFixed(1)} s)`,
    `failover retries: ${f.cut} requests cut (connection reset or refused), ${f.retries} re-sent with their Idempotency-Key to another port, ${f.replayed} answered as replays, ${f.unanswered} orders never answered; non-200 answers ${JSON.stringify(f.statuses)}`,
    `failover duplicates: ${f.journal.duplicates} (journal ${f.journal.journal} trades, ${f.journal.answered} orders answered 200, ${f.journal.claims} keys claimed, ${f.journal.tradesBeyondClaims} trades beyond claims, ${f.journal.missing} answered orders missing from the journal)`,
    `failover audit (ctl market audit --json): ${auditText(f.audit)}`
  ]
  if (f.firstError) lines.push(`failover first non-200: ${f.firstError}`)
  return lines.join("\n")
}

const main = async () => {
  const started = Date.now()
  await ensureDatabase()
  const load = os.loadavg().map((x) => x.toFixed(2))
  const header = [
    `cluster bench: ${cores} cores, load average ${load.join(" ")} at start (other processes on the machine share the cores); load generator in this process, ${CLIENTS} clients (one wallet each), closed loop, buy ${BUY} coin then sell ${SELL} tokens on the same ticker, each order with an Idempotency-Key`,
    `cells: ${WARMUP_SECONDS} s warm-up, then ${CELL_SECONDS} s measured (at most ${MAX_ORDERS} orders); tickers round-robin, HTTP ports round-robin over every runner; shards ${SHARDS ?? "300 (default)"}; PostgreSQL ${redacted(benchUrl)}, a schema per configuration`,
    `baseline: SQLite single (one \`ctl serve\` on SQLite, started by this bench in the same process tree); "× baseline" is each cell's trades/s over the SQLite single cell with the same tickers`
  ]
  if (!JSON_OUT) console.log(header.join("\n"))
  const out = { cores, loadAverage: os.loadavg(), clients: CLIENTS, cellSeconds: CELL_SECONDS, quick: QUICK }
  if (!args.includes("--no-matrix")) {
    const { cells, audits, idles } = await matrix()
    Object.assign(out, { cells, audits, idles })
    if (!JSON_OUT) {
      console.log(table(cells))
      const idle = idles.map(
        (i) => `${i.config} ${i.idleCoreShare === undefined ? "—" : `${(i.idleCoreShare * 100).toFixed(0)} %`}`
      )
      console.log(
        `server CPU with no load (share of one core, over ${IDLE_SECONDS} s before the cells): ${idle.join(", ")}`
      )
      for (const { config, audit } of audits) console.log(`audit ${config}: ${auditText(audit)}`)
      for (const c of cells)
        if (c.firstError) console.log(`${c.config}, ${c.tickers} tickers, first non-200: ${c.firstError}`)
    }
  }
  if (!args.includes("--no-failover")) {
    progress("failover run")
    out.failover = await failover()
    if (!JSON_OUT) console.log(printFailover(out.failover))
  }
  out.totalSeconds = (Date.now() - started) / 1000
  out.loadAverageAtEnd = os.loadavg()
  if (JSON_OUT) console.log(JSON.stringify(out, null, 2))
  else
    console.log(
      `total ${out.totalSeconds.toFixed(0)} s; load average at end ${out.loadAverageAtEnd.map((x) => x.toFixed(2)).join(" ")}`
    )
  const failed = out.failover !== undefined && (out.failover.journal.duplicates > 0 || out.failover.audit.ok !== true)
  return failed || (out.audits ?? []).some((a) => a.audit.ok !== true) ? 1 : 0
}

main().then(
  async (code) => {
    killChildren()
    await dropSchemas()
    process.exit(code)
  },
  async (error) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : String(error))
    killChildren()
    await dropSchemas()
    process.exit(1)
  }
)
