// Baseline for the market bench: raw node:http + better-sqlite3 doing what one Keel trade does, in one
// BEGIN IMMEDIATE transaction (WAL, synchronous=NORMAL): the API key by its SHA-256 (indexed), the agent's
// status, the curve's virtual reserves, the constant-product quote in BigInt (fee rounded against the
// trader), per leg the balance check and its upsert (wallet / curve / agent / treasury, coin and token),
// the journal entry and its legs, the curve, the agent's revenue, the trade row, the wallet's new coin
// balance, the outbox event; then the same JSON answer. A compact equivalent of Keel's market schema
// (src/services/market/migrations.ts). No validation framework, no middleware, no rate limiter: the floor.
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { keccak_256 } from "@noble/hashes/sha3.js"
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js"
import Database from "better-sqlite3"
import { defaultLaunch, ratioText, unitsText } from "keel/market"

const dir = process.env.BENCH_DIR
fs.mkdirSync(dir, { recursive: true })
const db = new Database(path.join(dir, "raw.db"))
db.pragma("journal_mode = WAL")
db.pragma("synchronous = NORMAL")
db.exec(`
  CREATE TABLE ledger_balances (account TEXT NOT NULL, asset TEXT NOT NULL, balance INTEGER NOT NULL,
    PRIMARY KEY (account, asset));
  CREATE TABLE ledger_entries (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, reference TEXT NOT NULL, created_at INTEGER NOT NULL);
  CREATE TABLE ledger_legs (entry_id INTEGER NOT NULL REFERENCES ledger_entries (id), account TEXT NOT NULL,
    asset TEXT NOT NULL, amount INTEGER NOT NULL);
  CREATE INDEX ledger_legs_by_account ON ledger_legs (account, asset);
  CREATE TABLE market_curves (ticker TEXT PRIMARY KEY, virtual_coin INTEGER NOT NULL, virtual_token INTEGER NOT NULL,
    real_token INTEGER NOT NULL, launched_at INTEGER NOT NULL);
  CREATE TABLE market_trades (id INTEGER PRIMARY KEY, ticker TEXT NOT NULL, wallet TEXT NOT NULL, side TEXT NOT NULL,
    coin INTEGER NOT NULL, tokens INTEGER NOT NULL, fee INTEGER NOT NULL, entry_id INTEGER NOT NULL,
    created_at INTEGER NOT NULL, virtual_coin_after INTEGER, virtual_token_after INTEGER);
  CREATE INDEX market_trades_by_ticker ON market_trades (ticker, created_at);
  CREATE INDEX market_trades_by_time ON market_trades (created_at);
  CREATE TABLE market_agents (ticker TEXT PRIMARY KEY, name TEXT NOT NULL, status TEXT NOT NULL,
    total_revenue INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL);
  CREATE TABLE market_api_keys (id TEXT PRIMARY KEY, hash TEXT NOT NULL UNIQUE, wallet TEXT, agent TEXT,
    created_at INTEGER NOT NULL, revoked_at INTEGER);
  CREATE TABLE market_events (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, payload TEXT NOT NULL, created_at INTEGER NOT NULL);
`)
db.defaultSafeIntegers(true)

// ---- money: nano-units in BigInt, as src/services/market/{Units,BondingCurve}.ts
const UNIT = 1_000_000_000n
const BPS = 10_000n
const FEE_BPS = 100n
const AGENT_SHARE_BPS = 5_000n
const COIN = "COIN"
const TREASURY = "platform:treasury"
const toUnits = (n) => {
  const [whole, fraction = ""] = n.toFixed(9).split(".")
  return BigInt(whole) * UNIT + BigInt(`${fraction}000000000`.slice(0, 9))
}
const fromUnits = (u) => Number(u) / Number(UNIT)
const ceilDiv = (a, b) => (a % b === 0n ? a / b : a / b + (a > 0n === b > 0n ? 1n : 0n))
const price = (num, den) => (den === 0n ? 0 : Number((Number(num) / Number(den)).toPrecision(12)))
const quoteBuy = (c, coinIn) => {
  let fee = ceilDiv(coinIn * FEE_BPS, BPS)
  let net = coinIn - fee
  if (net <= 0n) return undefined
  const k = c.vc * c.vt
  let vc = c.vc + net
  let vt = ceilDiv(k, vc)
  let out = c.vt - vt
  const partial = out > c.rt
  if (partial) {
    out = c.rt
    vt = c.vt - out
    vc = ceilDiv(k, vt)
    net = vc - c.vc
    fee = ceilDiv(net * FEE_BPS, BPS - FEE_BPS)
  }
  if (out <= 0n) return undefined
  return { coin: fee + net, curveCoin: net, tokens: out, fee, partial, next: { vc, vt, rt: c.rt - out } }
}
const quoteSell = (c, tokensIn) => {
  const k = c.vc * c.vt
  const vt = c.vt + tokensIn
  const vc = ceilDiv(k, vt)
  const gross = c.vc - vc
  const fee = ceilDiv(gross * FEE_BPS, BPS)
  const coinOut = gross - fee
  if (coinOut <= 0n) return undefined
  return { coin: coinOut, curveCoin: gross, tokens: tokensIn, fee, next: { vc, vt, rt: c.rt + tokensIn } }
}
const checksum = (address) => {
  const lower = address.toLowerCase().slice(2)
  const hash = bytesToHex(keccak_256(utf8ToBytes(lower)))
  let out = "0x"
  for (let i = 0; i < 40; i++) out += Number.parseInt(hash[i], 16) >= 8 ? lower[i].toUpperCase() : lower[i]
  return out
}
const sha256 = (text) => createHash("sha256").update(text).digest("hex")

// ---- statements
const selectKey = db.prepare("SELECT wallet, agent FROM market_api_keys WHERE hash = ? AND revoked_at IS NULL")
const selectStatus = db.prepare("SELECT status FROM market_agents WHERE ticker = ?")
const selectCurve = db.prepare("SELECT virtual_coin, virtual_token, real_token FROM market_curves WHERE ticker = ?")
const selectBalance = db.prepare("SELECT balance FROM ledger_balances WHERE account = ? AND asset = ?")
const upsertBalance = db.prepare(`INSERT INTO ledger_balances (account, asset, balance) VALUES (?, ?, ?)
  ON CONFLICT (account, asset) DO UPDATE SET balance = ledger_balances.balance + excluded.balance`)
const insertEntry = db.prepare("INSERT INTO ledger_entries (kind, reference, created_at) VALUES (?, ?, ?) RETURNING id")
const legsOf = (n) =>
  db.prepare(
    `INSERT INTO ledger_legs (entry_id, account, asset, amount) VALUES ${Array(n).fill("(?, ?, ?, ?)").join(", ")}`
  )
const insertLegs = { 2: legsOf(2), 6: legsOf(6) }
const updateCurve = db.prepare(
  "UPDATE market_curves SET virtual_coin = ?, virtual_token = ?, real_token = ? WHERE ticker = ?"
)
const updateRevenue = db.prepare("UPDATE market_agents SET total_revenue = total_revenue + ? WHERE ticker = ?")
const insertTrade =
  db.prepare(`INSERT INTO market_trades (ticker, wallet, side, coin, tokens, fee, entry_id, created_at,
  virtual_coin_after, virtual_token_after) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`)
const insertEvent = db.prepare("INSERT INTO market_events (kind, payload, created_at) VALUES (?, ?, ?)")

class Refusal extends Error {
  constructor(status, code, detail) {
    super(detail)
    this.status = status
    this.code = code
  }
}

/** One journal entry: legs sum to zero per asset; no ordinary account goes negative. */
const post = (kind, reference, legs, now) => {
  const sums = new Map()
  for (const [, asset, amount] of legs) sums.set(asset, (sums.get(asset) ?? 0n) + amount)
  for (const sum of sums.values()) if (sum !== 0n) throw new Error("unbalanced entry")
  for (const [account, asset, amount] of legs) {
    const next = (selectBalance.get(account, asset)?.balance ?? 0n) + amount
    if (next < 0n && !account.startsWith("system:"))
      throw new Refusal(
        422,
        asset === COIN ? "INSUFFICIENT_FUNDS" : "INSUFFICIENT_TOKENS",
        `${account} holds too little ${asset}`
      )
    upsertBalance.run(account, asset, amount)
  }
  const id = insertEntry.get(kind, reference, now).id
  insertLegs[legs.length].run(...legs.flatMap(([account, asset, amount]) => [id, account, asset, amount]))
  return id
}

const trade = db.transaction((side, ticker, keyHash, userId, amount) => {
  const now = Date.now()
  const principal = selectKey.get(keyHash)
  if (principal === undefined) throw new Refusal(401, "UNAUTHORIZED", "unknown or revoked API key")
  const address = userId.toLowerCase()
  if (principal.wallet !== address) throw new Refusal(403, "WALLET_MISMATCH", "user_id is not the authenticated wallet")
  const status = selectStatus.get(ticker)?.status
  if (status !== undefined && status !== "running")
    throw new Refusal(409, "AGENT_NOT_TRADING", `${ticker} is ${status}`)
  const row = selectCurve.get(ticker)
  if (row === undefined) throw new Refusal(404, "AGENT_NOT_FOUND", `no agent ${ticker}`)
  const curve = { vc: row.virtual_coin, vt: row.virtual_token, rt: row.real_token }
  const q = side === "buy" ? quoteBuy(curve, amount) : quoteSell(curve, amount)
  if (q === undefined) throw new Refusal(400, "TRADE_TOO_SMALL", "the trade is too small")
  const wallet = `wallet:${address}`
  const curveAccount = `curve:${ticker}`
  const legs =
    side === "buy"
      ? [
          [wallet, COIN, -q.coin],
          [curveAccount, COIN, q.curveCoin],
          [curveAccount, ticker, -q.tokens],
          [wallet, ticker, q.tokens]
        ]
      : [
          [wallet, ticker, -q.tokens],
          [curveAccount, ticker, q.tokens],
          [curveAccount, COIN, -q.curveCoin],
          [wallet, COIN, q.coin]
        ]
  const agentFee = (q.fee * AGENT_SHARE_BPS) / BPS
  legs.push([`agent:${ticker}`, COIN, agentFee], [TREASURY, COIN, q.fee - agentFee])
  const entryId = post(side, ticker, legs, now)
  updateCurve.run(q.next.vc, q.next.vt, q.next.rt, ticker)
  updateRevenue.run(agentFee, ticker)
  const tradeId = insertTrade.get(ticker, wallet, side, q.coin, q.tokens, q.fee, entryId, now, q.next.vc, q.next.vt).id
  const balance = selectBalance.get(wallet, COIN)?.balance ?? 0n
  const event = {
    id: String(tradeId),
    ticker,
    side,
    wallet: checksum(address),
    coin: fromUnits(q.coin),
    coin_str: unitsText(q.coin),
    curve_coin: fromUnits(q.curveCoin),
    curve_coin_str: unitsText(q.curveCoin),
    tokens: fromUnits(q.tokens),
    tokens_str: unitsText(q.tokens),
    fee: fromUnits(q.fee),
    fee_str: unitsText(q.fee),
    partial: q.partial === true,
    price_per_token: price(q.curveCoin, q.tokens),
    price_per_token_str: ratioText(q.curveCoin, q.tokens),
    price: price(q.next.vc, q.next.vt),
    price_str: ratioText(q.next.vc, q.next.vt),
    created_at: new Date(now).toISOString()
  }
  insertEvent.run("trade", JSON.stringify(event), now)
  const common = { success: true }
  return side === "buy"
    ? {
        ...common,
        tokens_received: fromUnits(q.tokens),
        tokens_received_str: unitsText(q.tokens),
        price_per_token: price(q.curveCoin, q.tokens),
        price_per_token_str: ratioText(q.curveCoin, q.tokens),
        fee: fromUnits(q.fee),
        fee_str: unitsText(q.fee),
        coin_spent: fromUnits(q.coin),
        coin_spent_str: unitsText(q.coin),
        partial: q.partial === true,
        new_balance: fromUnits(balance),
        new_balance_str: unitsText(balance)
      }
    : {
        ...common,
        coin_received: fromUnits(q.coin),
        coin_received_str: unitsText(q.coin),
        price_per_token: price(q.curveCoin, q.tokens),
        price_per_token_str: ratioText(q.curveCoin, q.tokens),
        fee: fromUnits(q.fee),
        fee_str: unitsText(q.fee),
        tokens_sold: fromUnits(q.tokens),
        tokens_sold_str: unitsText(q.tokens),
        partial: false,
        new_balance: fromUnits(balance),
        new_balance_str: unitsText(balance)
      }
})

// ---- the bench's initial state: the agent and its curve (Keel's launch parameters), wallets' keys and coin
const setup = JSON.parse(fs.readFileSync(process.env.BENCH_SETUP, "utf8"))
db.transaction(() => {
  const now = Date.now()
  const { ticker } = setup
  const realToken = defaultLaunch.realToken
  db.prepare("INSERT INTO market_agents (ticker, name, status, created_at) VALUES (?, 'Bench', 'running', ?)").run(
    ticker,
    now
  )
  db.prepare("INSERT INTO market_curves VALUES (?, ?, ?, ?, ?)").run(
    ticker,
    defaultLaunch.virtualCoin,
    defaultLaunch.virtualToken,
    realToken,
    now
  )
  post(
    "launch",
    ticker,
    [
      [`system:issuance:${ticker}`, ticker, -realToken],
      [`curve:${ticker}`, ticker, realToken]
    ],
    now
  )
  const insertKey = db.prepare("INSERT INTO market_api_keys (id, hash, wallet, created_at) VALUES (?, ?, ?, ?)")
  for (const [i, { address, key }] of setup.wallets.entries()) {
    insertKey.run(`key_${i}`, sha256(key), address.toLowerCase(), now)
    const amount = BigInt(setup.mint) * UNIT
    post(
      "mint",
      "bench",
      [
        ["system:issuance", COIN, -amount],
        [`wallet:${address.toLowerCase()}`, COIN, amount]
      ],
      now
    )
  }
})()

// ---- HTTP
const TRADE = /^\/api\/tokens\/([A-Za-z0-9]{1,16})\/(buy|sell)$/
const BEARER = /^Bearer ([A-Za-z0-9_-]{8,200})$/
const ADDRESS = /^0x[0-9a-fA-F]{40}$/
const send = (res, status, body) => {
  const text = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
  res.end(text)
}
const refuse = (res, status, code, detail) => send(res, status, { code, detail })

http
  .createServer((req, res) => {
    const match = req.method === "POST" ? TRADE.exec(req.url) : null
    if (match !== null) {
      let body = ""
      req.setEncoding("utf8")
      req.on("data", (c) => {
        body += c
      })
      req.on("end", () => {
        const bearer = BEARER.exec(req.headers.authorization ?? "")
        if (bearer === null) return refuse(res, 401, "UNAUTHORIZED", "Authorization must be `Bearer <API key>`")
        let payload
        try {
          payload = JSON.parse(body)
        } catch {
          return refuse(res, 400, "INVALID_INPUT", "the body is not JSON")
        }
        const { user_id, amount } = payload ?? {}
        if (typeof user_id !== "string" || !ADDRESS.test(user_id))
          return refuse(res, 400, "INVALID_INPUT", "user_id must be a 0x wallet address")
        if (typeof amount !== "number" || !Number.isFinite(amount) || amount <= 0 || amount > 1e12)
          return refuse(res, 400, "INVALID_INPUT", "amount must be a positive number (at most 1e12)")
        try {
          send(res, 200, trade.immediate(match[2], match[1].toUpperCase(), sha256(bearer[1]), user_id, toUnits(amount)))
        } catch (e) {
          if (e instanceof Refusal) return refuse(res, e.status, e.code, e.message)
          refuse(res, 500, "INTERNAL", String(e))
        }
      })
      return
    }
    if (req.url === "/api/health") return send(res, 200, { status: "ok" })
    res.writeHead(404).end()
  })
  .listen(Number(process.env.BENCH_PORT), "127.0.0.1")
