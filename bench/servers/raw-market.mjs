// Baseline for the market bench: raw node:http + better-sqlite3 doing what one Keel trade does, in one
// BEGIN IMMEDIATE transaction (WAL, synchronous=NORMAL): the API key by its SHA-256 (indexed), the agent's
// status, the curve's virtual reserves, the constant-product quote in BigInt (fee rounded against the
// trader), per leg the balance check and its upsert (wallet / curve / agent / treasury, coin and token),
// the journal entry and its legs, the curve, the agent's revenue, the trade row, the wallet's new coin
// balance, the outbox event; then the same JSON answer. A compact equivalent of Keel's market schema
// (src/services/market/migrations.ts). No validation framework, no middleware, no rate limiter: the floor. What
// both engines' baselines share (money, legs, event, answer, HTTP) is in raw-market-common.mjs.
import * as fs from "node:fs"
import * as path from "node:path"
import Database from "better-sqlite3"
import {
  COIN,
  checkStatus,
  initialState,
  overdraft,
  principalOf,
  quoteOf,
  receipt,
  serve,
  tradeEvent,
  tradeLegs,
  unbalanced
} from "./raw-market-common.mjs"

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

/** One journal entry: legs sum to zero per asset; no ordinary account goes negative. */
const post = (kind, reference, legs, now) => {
  if (unbalanced(legs)) throw new Error("unbalanced entry")
  for (const [account, asset, amount] of legs) {
    const next = (selectBalance.get(account, asset)?.balance ?? 0n) + amount
    if (next < 0n && !account.startsWith("system:")) throw overdraft(account, asset)
    upsertBalance.run(account, asset, amount)
  }
  const id = insertEntry.get(kind, reference, now).id
  insertLegs[legs.length].run(...legs.flatMap(([account, asset, amount]) => [id, account, asset, amount]))
  return id
}

const trade = db.transaction((side, ticker, keyHash, userId, amount) => {
  const now = Date.now()
  const address = principalOf(selectKey.get(keyHash), userId)
  checkStatus(ticker, selectStatus.get(ticker)?.status)
  const q = quoteOf(side, ticker, selectCurve.get(ticker), amount)
  const wallet = `wallet:${address}`
  const { legs, agentFee } = tradeLegs(side, ticker, wallet, q)
  const entryId = post(side, ticker, legs, now)
  updateCurve.run(q.next.vc, q.next.vt, q.next.rt, ticker)
  updateRevenue.run(agentFee, ticker)
  const tradeId = insertTrade.get(ticker, wallet, side, q.coin, q.tokens, q.fee, entryId, now, q.next.vc, q.next.vt).id
  const balance = selectBalance.get(wallet, COIN)?.balance ?? 0n
  insertEvent.run("trade", JSON.stringify(tradeEvent(tradeId, ticker, side, address, q, now)), now)
  return receipt(side, q, balance)
})

// ---- the bench's initial state: the agent and its curve (Keel's launch parameters), wallets' keys and coin
const initial = initialState()
db.transaction(() => {
  const now = Date.now()
  db.prepare("INSERT INTO market_agents (ticker, name, status, created_at) VALUES (?, 'Bench', 'running', ?)").run(
    initial.ticker,
    now
  )
  db.prepare("INSERT INTO market_curves VALUES (?, ?, ?, ?, ?)").run(...initial.curve, now)
  const insertKey = db.prepare("INSERT INTO market_api_keys (id, hash, wallet, created_at) VALUES (?, ?, ?, ?)")
  for (const key of initial.keys) insertKey.run(...key, now)
  for (const [kind, reference, legs] of initial.entries) post(kind, reference, legs, now)
})()

serve((side, ticker, keyHash, userId, amount) => trade.immediate(side, ticker, keyHash, userId, amount))
