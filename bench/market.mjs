// Side-by-side benchmark of the agent-marketplace trade path through HTTP: POST /api/tokens/BENCH/buy and
// /sell alternately, spread over wallets with their API keys, Keel vs raw node:http + better-sqlite3 doing
// the same transaction per trade (bench/servers/raw-market.mjs), and, in the same run, Keel on PostgreSQL vs
// raw node:http + node-postgres sending the statements Keel sends there (bench/servers/raw-market-pg.mjs), each
// server in a database of its own, dropped after (`--engine sqlite|postgres|both`: bench/pg.mjs). Only 200
// answers count as trades. After each run the ledger is audited: Keel's with `ctl market audit --json`, the
// baseline's with the same checks in SQL. Overload: BENCH_MARKET_CONCURRENCY=64 (4x) and a small MARKET_TRADE_QUEUE (passed to the
// server from the environment) make the ticker's queue overflow; non-200 answers are counted by status (503s,
// and any other 5xx would show beside them), and the audit must still balance.
import { execFile } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import Database from "better-sqlite3"
import { defaultLaunch, fromUnits, quoteBuy, toUnits } from "keel/market"
import pg from "pg"
import { cores, cpuSeconds, MAX_SECONDS, ratioTable, start, stop } from "./harness.mjs"
import { enginesOf, POOL, withBackendCpu, withDatabase } from "./pg.mjs"

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.join(here, "..")
const TRADES = Number(process.env.BENCH_TRADES ?? 3_000)
const WARMUP = Number(process.env.BENCH_TRADES_WARMUP ?? 500)
const WALLETS = Number(process.env.BENCH_WALLETS ?? 20)
const CONCURRENCY = Number(process.env.BENCH_MARKET_CONCURRENCY ?? 16)
const TICKER = "BENCH"
const MINT = 1_000_000 // coin per wallet
const PRIME = 0.1 // coin each wallet spends once before the warm-up: ten sells' worth of tokens
const BUY = 0.01 // coin per buy
// Tokens per sell: 85 % of what a buy gets at launch, so the curve settles a little above its start
// and every wallet keeps tokens to sell (follows Keel's launch parameters).
const SELL = fromUnits((quoteBuy(defaultLaunch, toUnits(BUY), 100n).tokensOut * 85n) / 100n)

const wallets = Array.from({ length: WALLETS }, (_, i) => `0x${(0xbe7c4000 + i).toString(16).padStart(40, "0")}`)

const baseEnv = {
  KEEL_LOG_LEVEL: "warning",
  KEEL_LOG_FORMAT: "json",
  KEEL_DEMO_DATA: "false",
  MARKET_RATE_LIMIT_TRADING: "100000000",
  MARKET_RATE_LIMIT_PUBLIC: "100000000",
  MARKET_RATE_LIMIT_AUTHENTICATED: "100000000"
}

/** Runs a node script to completion (bounded), output captured; answers its stdout. */
const run = (args, env, timeoutMs = 120_000) =>
  new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      args,
      { cwd: root, env: { ...process.env, ...env }, timeout: timeoutMs, maxBuffer: 1 << 20 },
      (error, stdout, stderr) => {
        if (error && error.code !== 1)
          reject(new Error(`${args.join(" ")}: ${error.message}\n${stderr.slice(0, 2000)}`))
        else resolve({ code: error ? error.code : 0, stdout })
      }
    )
  })

/** The i-th trade: wallet i mod W; buys for a round of W, then sells for the next, and so on. */
const order = (credentials, i) => {
  const w = credentials[i % credentials.length]
  const side = Math.floor(i / credentials.length) % 2 === 0 ? "buy" : "sell"
  return {
    path: `/api/tokens/${TICKER}/${side}`,
    key: w.key,
    body: JSON.stringify({ user_id: w.address, amount: side === "buy" ? BUY : SELL })
  }
}

/** One POST over `agent`; answers status, body and latency. */
const post = (agent, port, { path: p, key, body }) =>
  new Promise((resolve) => {
    const t0 = process.hrtime.bigint()
    const req = http.request(
      {
        host: "127.0.0.1",
        port,
        method: "POST",
        path: p,
        agent,
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          authorization: `Bearer ${key}`
        }
      },
      (res) => {
        let text = ""
        res.setEncoding("utf8")
        res.on("data", (c) => {
          if (text.length < 4096) text += c
        })
        res.on("end", () => resolve({ status: res.statusCode, text, ms: Number(process.hrtime.bigint() - t0) / 1e6 }))
      }
    )
    req.on("error", (e) => resolve({ status: 0, text: String(e), ms: Number(process.hrtime.bigint() - t0) / 1e6 }))
    req.end(body)
  })

/** `count` trades made by `make(i)` with CONCURRENCY in flight over keep-alive connections, stopped at MAX_SECONDS. */
const load = async (port, count, make) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY })
  const latencies = []
  const statuses = {}
  let firstError
  let next = 0
  const deadline = Date.now() + MAX_SECONDS * 1000
  const worker = async () => {
    while (next < count && Date.now() < deadline) {
      const r = await post(agent, port, make(next++))
      if (r.status === 200) latencies.push(r.ms)
      else {
        statuses[r.status] = (statuses[r.status] ?? 0) + 1
        firstError ??= `${r.status} ${r.text.slice(0, 300)}`
      }
    }
  }
  const t0 = process.hrtime.bigint()
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9
  agent.destroy()
  latencies.sort((a, b) => a - b)
  const pct = (p) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0
  const non200 = Object.values(statuses).reduce((a, b) => a + b, 0)
  return {
    trades: latencies.length,
    sent: next,
    seconds,
    rps: latencies.length / seconds,
    p50: pct(0.5),
    p99: pct(0.99),
    non200,
    statuses,
    firstError
  }
}

/** The ledger checks of `Ledger.audit` as SQL: each answers rows that are problems (or a count of them). */
const AUDIT = {
  unbalanced: "SELECT entry_id, asset FROM ledger_legs GROUP BY entry_id, asset HAVING sum(amount) <> 0",
  mismatched: `SELECT count(*) AS n FROM ledger_balances b LEFT JOIN (SELECT account, asset, sum(amount) AS total
    FROM ledger_legs GROUP BY account, asset) p USING (account, asset) WHERE p.total IS DISTINCT FROM b.balance`,
  negative: "SELECT count(*) AS n FROM ledger_balances WHERE balance < 0 AND account NOT LIKE 'system:%'",
  nonZero: "SELECT asset FROM ledger_balances GROUP BY asset HAVING sum(balance) <> 0",
  entries: "SELECT count(*) AS n FROM ledger_entries",
  supply: "SELECT balance FROM ledger_balances WHERE account = 'system:issuance' AND asset = 'COIN'"
}

/** The audit's answer from `all(text)` (rows, integers as bigint or text), on either engine. */
const auditWith = async (all) => {
  const problems = []
  for (const r of await all(AUDIT.unbalanced)) problems.push(`entry ${r.entry_id} does not balance in ${r.asset}`)
  const mismatched = BigInt((await all(AUDIT.mismatched))[0].n)
  if (mismatched > 0n) problems.push(`${mismatched} balances differ from the journal`)
  const negative = BigInt((await all(AUDIT.negative))[0].n)
  if (negative > 0n) problems.push(`${negative} negative balances`)
  for (const r of await all(AUDIT.nonZero)) problems.push(`${r.asset} does not sum to zero`)
  const entries = Number((await all(AUDIT.entries))[0].n)
  const supply = -BigInt((await all(AUDIT.supply))[0]?.balance ?? 0)
  return { ok: problems.length === 0, entries, coin_supply: Number(supply) / 1e9, problems }
}

/** The baseline's ledger audited: its SQLite file, or its PostgreSQL database (`url`). */
const rawAudit = async (engine, dir, url) => {
  if (engine === "sqlite") {
    const db = new Database(path.join(dir, "raw.db"), { readonly: true })
    db.defaultSafeIntegers(true)
    try {
      return await auditWith(async (text) => db.prepare(text).all())
    } finally {
      db.close()
    }
  }
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    return await auditWith(async (text) => (await c.query(text)).rows)
  } finally {
    await c.end()
  }
}

/** The environment that points a server at `engine`: PostgreSQL's `url`, or SQLite (any KEEL_DATABASE_URL unset). */
const databaseEnv = (engine, url) =>
  engine === "sqlite"
    ? { KEEL_DATABASE_URL: undefined }
    : { KEEL_DATABASE_URL: url, BENCH_DATABASE_URL: url, BENCH_PG_POOL: String(POOL) }

/**
 * Starts a server (`name`: keel or raw) on `engine` — a fresh data dir, and on PostgreSQL a fresh database — primes
 * every wallet with one buy (wallet 0's answer is kept, to compare Keel's and the baseline's bodies), warms up,
 * measures, stops it, audits its ledger.
 */
const measure = (name, engine) =>
  engine === "sqlite" ? measureOn(name, engine) : withDatabase(`market_${name}`, (url) => measureOn(name, engine, url))

const measureOn = async (name, engine, url) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `keel-bench-market-${name}-`))
  const database = databaseEnv(engine, url)
  try {
    const setupFile = path.join(dir, "market-setup.json")
    let credentials
    if (name === "keel") {
      const input = path.join(dir, "market-wallets.json")
      fs.writeFileSync(input, JSON.stringify({ ticker: TICKER, wallets, mint: MINT }))
      const t0 = Date.now()
      await run([path.join(here, "market-setup.mjs")], {
        ...baseEnv,
        ...database,
        KEEL_DATA_DIR: dir,
        BENCH_SETUP: input,
        BENCH_SETUP_OUT: setupFile
      })
      credentials = JSON.parse(fs.readFileSync(setupFile, "utf8")).wallets
      console.error(`keel setup (${engine}): ${wallets.length} wallets in ${Date.now() - t0} ms`)
    } else {
      credentials = wallets.map((address) => ({ address, key: `keel_${randomBytes(32).toString("base64url")}` }))
      fs.writeFileSync(setupFile, JSON.stringify({ ticker: TICKER, wallets: credentials, mint: MINT }))
    }
    const profile = process.env.BENCH_MARKET_PROFILE // a directory: the Keel server writes a V8 CPU profile there
    const server =
      name === "keel"
        ? (process.env.BENCH_KEEL_SERVER ?? (profile ? "keel-profiled.mjs" : "keel.mjs"))
        : engine === "sqlite"
          ? "raw-market.mjs"
          : "raw-market-pg.mjs"
    const { child, port } = await start(server, {
      ...baseEnv,
      ...database,
      ...(profile ? { BENCH_PROFILE_DIR: path.resolve(profile) } : {}),
      BENCH_DIR: dir,
      KEEL_DATA_DIR: dir,
      BENCH_SETUP: setupFile
    })
    let result
    try {
      const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY })
      const prime = (w) =>
        post(agent, port, {
          path: `/api/tokens/${TICKER}/buy`,
          key: w.key,
          body: JSON.stringify({ user_id: w.address, amount: PRIME })
        })
      const first = await prime(credentials[0])
      const rest = await Promise.all(credentials.slice(1).map(prime))
      agent.destroy()
      const primeFailures = [first, ...rest].filter((r) => r.status !== 200)
      if (primeFailures.length > 0)
        throw new Error(`${name}: priming buys failed: ${primeFailures[0].status} ${primeFailures[0].text}`)
      await load(port, WARMUP, (i) => order(credentials, i))
      const measured = () => withCpu(child, () => load(port, TRADES, (i) => order(credentials, i + WARMUP)))
      if (engine === "sqlite") result = await measured()
      else {
        const { result: r, seconds } = await withBackendCpu(child.pid, measured)
        result = r
        const answered = r.trades + r.non200
        result.dbCpuMicros = seconds === undefined || answered === 0 ? undefined : (seconds * 1e6) / answered
      }
      result.firstAnswer = first.text
    } finally {
      await stop(child)
    }
    if (name === "keel") {
      const { stdout } = await run(["bin/ctl.js", "market", "audit", "--json"], {
        ...baseEnv,
        ...database,
        KEEL_DATA_DIR: dir
      })
      result.audit = JSON.parse(stdout)
    } else {
      result.audit = await rawAudit(engine, dir, url)
    }
    return result
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

/** The lines of one engine start `market` (SQLite: the format before PostgreSQL was measured) or `market pg`. */
const prefixOf = (engine) => (engine === "sqlite" ? "market" : "market pg")
const line = (prefix, name, r) =>
  `${prefix} buy/sell  ${name.padEnd(5)} ${r.rps.toFixed(0).padStart(6)} trades/s  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  (non-200: ${r.non200}${r.non200 > 0 ? ` ${JSON.stringify(r.statuses)}` : ""}; ${r.trades}/${TRADES} trades in ${r.seconds.toFixed(1)} s)`
const auditLine = (prefix, name, a) =>
  `${prefix} audit     ${name.padEnd(5)} ${a.ok ? "consistent" : "INCONSISTENT"}: ${a.entries} entries, coin supply ${a.coin_supply}${a.ok ? "" : ` — ${a.problems.slice(0, 5).join("; ")}`}`

/** The floor: the same requests answered with a constant receipt (body read, nothing else) by `script`. */
const floor = async (script) => {
  const { child, port } = await start(script, {})
  try {
    const credentials = wallets.map((address) => ({ address, key: "keel_floor_0123456789" }))
    await load(port, WARMUP, (i) => order(credentials, i))
    return await withCpu(child, () => load(port, TRADES, (i) => order(credentials, i + WARMUP)))
  } finally {
    await stop(child)
  }
}

/** The server's own CPU time per answered request during `measured` (less disturbed than throughput). */
const withCpu = async (child, measured) => {
  const before = cpuSeconds(child.pid)
  const result = await measured()
  const after = cpuSeconds(child.pid)
  const answered = result.trades + result.non200
  result.cpuMicros =
    before === undefined || after === undefined || answered === 0 ? undefined : ((after - before) * 1e6) / answered
  return result
}
const cpu = (r) => (r.cpuMicros === undefined ? "n/a" : `${r.cpuMicros.toFixed(0)} µs`)

const { engines, note } = await enginesOf()
console.error(note)
const runs = []
for (const engine of engines)
  runs.push({ engine, raw: await measure("raw", engine), keel: await measure("keel", engine) })
const floorRaw = await floor("raw-constant.mjs")
const floorEffect = await floor("effect-constant.mjs")

/** Server CPU, and on PostgreSQL the database's CPU for that server beside it. */
const cpuWithDb = (r) =>
  r.dbCpuMicros === undefined ? cpu(r) : `${cpu(r)} + PostgreSQL ${r.dbCpuMicros.toFixed(0)} µs`
const floorLine = (name, r) =>
  `market floor     ${name.padEnd(28)} ${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50.toFixed(2)} ms  (a constant receipt: ${(1e6 / r.rps).toFixed(0)} µs a request)`

console.log(
  `POST /api/tokens/${TICKER}/buy ${BUY} coin | sell ${SELL} tokens alternately, ${WALLETS} wallets, ${TRADES} trades after ${WARMUP} warm-up, ${CONCURRENCY} concurrent keep-alive connections, ${cores} cores`
)
console.log(note)
for (const [i, { engine, keel, raw }] of runs.entries()) {
  const p = prefixOf(engine)
  console.log(line(p, "keel", keel))
  console.log(line(p, "raw", raw))
  console.log(`${p} ratio keel/raw  ${(keel.rps / raw.rps).toFixed(2)}`)
  if (i === 0) {
    console.log(floorLine("raw node:http", floorRaw))
    console.log(floorLine("bare @effect/platform router", floorEffect))
  }
  console.log(
    `${p} time per trade  keel ${(1e6 / keel.rps).toFixed(0)} µs, raw ${(1e6 / raw.rps).toFixed(0)} µs; Keel above the platform floor ${(1e6 / keel.rps - 1e6 / floorEffect.rps).toFixed(0)} µs, raw above its floor ${(1e6 / raw.rps - 1e6 / floorRaw.rps).toFixed(0)} µs`
  )
  console.log(
    `${p} server CPU per request  keel ${cpuWithDb(keel)}, raw ${cpuWithDb(raw)}; floors: @effect/platform ${cpu(floorEffect)}, node:http ${cpu(floorRaw)}`
  )
  console.log(auditLine(p, "keel", keel.audit))
  console.log(auditLine(p, "raw", raw.audit))
  const same = keel.firstAnswer === raw.firstAnswer
  console.log(
    `${p} first answer ${same ? "identical" : "DIFFERS"}: ${keel.firstAnswer}${same ? "" : ` vs raw ${raw.firstAnswer}`}`
  )
  if (keel.firstError) console.log(`${p === "market" ? "" : "pg "}keel first non-200: ${keel.firstError}`)
  if (raw.firstError) console.log(`${p === "market" ? "" : "pg "}raw first non-200: ${raw.firstError}`)
}
console.log(
  ratioTable(
    runs.map(({ engine, keel, raw }) => ({
      engine,
      workload: `POST /api/tokens/${TICKER}/buy|sell`,
      keel: keel.rps,
      baseline: raw.rps,
      unit: "trades/s"
    }))
  )
)
