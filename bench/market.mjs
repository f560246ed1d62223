// Side-by-side benchmark of the agent-marketplace trade path through HTTP: POST /api/tokens/BENCH/buy and
// /sell alternately, spread over wallets with their API keys, Keel vs raw node:http + better-sqlite3 doing
// the same transaction per trade (bench/servers/raw-market.mjs). Only 200 answers count as trades.
// After each run the ledger is audited: Keel's with `ctl market audit --json`, the baseline's with the
// same checks in SQL. Overload: BENCH_MARKET_CONCURRENCY=64 (4x) and a small MARKET_TRADE_QUEUE (passed to the
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
import { cores, cpuSeconds, MAX_SECONDS, start } from "./harness.mjs"

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

const stop = async (child) => {
  if (child.exitCode !== null) return
  const exited = new Promise((resolve) => child.once("exit", resolve))
  child.kill("SIGTERM")
  const timer = setTimeout(() => child.kill("SIGKILL"), 15_000)
  await exited
  clearTimeout(timer)
}

/** The ledger checks of `Ledger.audit`, on the baseline's database. */
const rawAudit = (file) => {
  const db = new Database(file, { readonly: true })
  db.defaultSafeIntegers(true)
  try {
    const problems = []
    for (const r of db
      .prepare("SELECT entry_id, asset FROM ledger_legs GROUP BY entry_id, asset HAVING sum(amount) <> 0")
      .all())
      problems.push(`entry ${r.entry_id} does not balance in ${r.asset}`)
    const mismatched = db
      .prepare(`SELECT count(*) AS n FROM ledger_balances b LEFT JOIN (SELECT account, asset, sum(amount) AS total
        FROM ledger_legs GROUP BY account, asset) p USING (account, asset) WHERE p.total IS NOT b.balance`)
      .get().n
    if (mismatched > 0n) problems.push(`${mismatched} balances differ from the journal`)
    const negative = db
      .prepare("SELECT count(*) AS n FROM ledger_balances WHERE balance < 0 AND account NOT LIKE 'system:%'")
      .get().n
    if (negative > 0n) problems.push(`${negative} negative balances`)
    for (const r of db.prepare("SELECT asset FROM ledger_balances GROUP BY asset HAVING sum(balance) <> 0").all())
      problems.push(`${r.asset} does not sum to zero`)
    const entries = Number(db.prepare("SELECT count(*) AS n FROM ledger_entries").get().n)
    const supply = -(
      db.prepare("SELECT balance FROM ledger_balances WHERE account = 'system:issuance' AND asset = 'COIN'").get()
        ?.balance ?? 0n
    )
    return { ok: problems.length === 0, entries, coin_supply: Number(supply) / 1e9, problems }
  } finally {
    db.close()
  }
}

/**
 * Starts a server on a fresh data dir, primes every wallet with one buy (wallet 0's answer is kept, to
 * compare Keel's and the baseline's bodies), warms up, measures, stops it, audits its ledger.
 */
const measure = async (name) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `keel-bench-market-${name}-`))
  try {
    const setupFile = path.join(dir, "market-setup.json")
    let credentials
    if (name === "keel") {
      const input = path.join(dir, "market-wallets.json")
      fs.writeFileSync(input, JSON.stringify({ ticker: TICKER, wallets, mint: MINT }))
      const t0 = Date.now()
      await run([path.join(here, "market-setup.mjs")], {
        ...baseEnv,
        KEEL_DATA_DIR: dir,
        BENCH_SETUP: input,
        BENCH_SETUP_OUT: setupFile
      })
      credentials = JSON.parse(fs.readFileSync(setupFile, "utf8")).wallets
      console.error(`keel setup: ${wallets.length} wallets in ${Date.now() - t0} ms`)
    } else {
      credentials = wallets.map((address) => ({ address, key: `keel_${randomBytes(32).toString("base64url")}` }))
      fs.writeFileSync(setupFile, JSON.stringify({ ticker: TICKER, wallets: credentials, mint: MINT }))
    }
    const profile = process.env.BENCH_MARKET_PROFILE // a directory: the Keel server writes a V8 CPU profile there
    const server =
      name === "keel"
        ? (process.env.BENCH_KEEL_SERVER ?? (profile ? "keel-profiled.mjs" : "keel.mjs"))
        : "raw-market.mjs"
    const { child, port } = await start(server, {
      ...baseEnv,
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
      result = await withCpu(child, () => load(port, TRADES, (i) => order(credentials, i + WARMUP)))
      result.firstAnswer = first.text
    } finally {
      await stop(child)
    }
    if (name === "keel") {
      const { stdout } = await run(["bin/ctl.js", "market", "audit", "--json"], { ...baseEnv, KEEL_DATA_DIR: dir })
      result.audit = JSON.parse(stdout)
    } else {
      result.audit = rawAudit(path.join(dir, "raw.db"))
    }
    return result
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

const line = (name, r) =>
  `market buy/sell  ${name.padEnd(5)} ${r.rps.toFixed(0).padStart(6)} trades/s  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  (non-200: ${r.non200}${r.non200 > 0 ? ` ${JSON.stringify(r.statuses)}` : ""}; ${r.trades}/${TRADES} trades in ${r.seconds.toFixed(1)} s)`
const auditLine = (name, a) =>
  `market audit     ${name.padEnd(5)} ${a.ok ? "consistent" : "INCONSISTENT"}: ${a.entries} entries, coin supply ${a.coin_supply}${a.ok ? "" : ` — ${a.problems.slice(0, 5).join("; ")}`}`

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

const raw = await measure("raw")
const keel = await measure("keel")
const floorRaw = await floor("raw-constant.mjs")
const floorEffect = await floor("effect-constant.mjs")

console.log(
  `POST /api/tokens/${TICKER}/buy ${BUY} coin | sell ${SELL} tokens alternately, ${WALLETS} wallets, ${TRADES} trades after ${WARMUP} warm-up, ${CONCURRENCY} concurrent keep-alive connections, ${cores} cores`
)
console.log(line("keel", keel))
console.log(line("raw", raw))
console.log(`market ratio keel/raw  ${(keel.rps / raw.rps).toFixed(2)}`)
const floorLine = (name, r) =>
  `market floor     ${name.padEnd(28)} ${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50.toFixed(2)} ms  (a constant receipt: ${(1e6 / r.rps).toFixed(0)} µs a request)`
console.log(floorLine("raw node:http", floorRaw))
console.log(floorLine("bare @effect/platform router", floorEffect))
console.log(
  `market time per trade  keel ${(1e6 / keel.rps).toFixed(0)} µs, raw ${(1e6 / raw.rps).toFixed(0)} µs; Keel above the platform floor ${(1e6 / keel.rps - 1e6 / floorEffect.rps).toFixed(0)} µs, raw above its floor ${(1e6 / raw.rps - 1e6 / floorRaw.rps).toFixed(0)} µs`
)
console.log(
  `market server CPU per request  keel ${cpu(keel)}, raw ${cpu(raw)}; floors: @effect/platform ${cpu(floorEffect)}, node:http ${cpu(floorRaw)}`
)
console.log(auditLine("keel", keel.audit))
console.log(auditLine("raw", raw.audit))
const same = keel.firstAnswer === raw.firstAnswer
console.log(
  `market first answer ${same ? "identical" : "DIFFERS"}: ${keel.firstAnswer}${same ? "" : ` vs raw ${raw.firstAnswer}`}`
)
if (keel.firstError) console.log(`keel first non-200: ${keel.firstError}`)
if (raw.firstError) console.log(`raw first non-200: ${raw.firstError}`)
