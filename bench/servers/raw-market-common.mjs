// What both raw market baselines (raw-market.mjs on better-sqlite3, raw-market-pg.mjs on node-postgres) share
// besides their statements: the money (nano-units in BigInt, as src/services/market/{Units,BondingCurve}.ts), a
// trade's journal legs, its outbox event and its JSON answer, the bench's initial state, and the HTTP side (route,
// bearer key, body checks). No validation framework, no middleware, no rate limiter: the floor.
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as http from "node:http"
import { keccak_256 } from "@noble/hashes/sha3.js"
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js"
import { defaultLaunch, ratioText, unitsText } from "keel/market"

export const UNIT = 1_000_000_000n
const BPS = 10_000n
const FEE_BPS = 100n
const AGENT_SHARE_BPS = 5_000n
export const COIN = "COIN"
const TREASURY = "platform:treasury"
export const toUnits = (n) => {
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
export const sha256 = (text) => createHash("sha256").update(text).digest("hex")

export class Refusal extends Error {
  constructor(status, code, detail) {
    super(detail)
    this.status = status
    this.code = code
  }
}

export const unbalanced = (legs) => {
  const sums = new Map()
  for (const [, asset, amount] of legs) sums.set(asset, (sums.get(asset) ?? 0n) + amount)
  for (const sum of sums.values()) if (sum !== 0n) return true
  return false
}

export const overdraft = (account, asset) =>
  new Refusal(
    422,
    asset === COIN ? "INSUFFICIENT_FUNDS" : "INSUFFICIENT_TOKENS",
    `${account} holds too little ${asset}`
  )

/** The checks before the curve: a live key of the order's own wallet. */
export const principalOf = (principal, userId) => {
  if (principal === undefined) throw new Refusal(401, "UNAUTHORIZED", "unknown or revoked API key")
  const address = userId.toLowerCase()
  if (principal.wallet !== address) throw new Refusal(403, "WALLET_MISMATCH", "user_id is not the authenticated wallet")
  return address
}

/** An agent that is not running does not trade (a curve without an agent, status undefined or null, does). */
export const checkStatus = (ticker, status) => {
  if (status !== undefined && status !== null && status !== "running")
    throw new Refusal(409, "AGENT_NOT_TRADING", `${ticker} is ${status}`)
}

/** The quote of an order on the ticker's curve row. */
export const quoteOf = (side, ticker, row, amount) => {
  if (row === undefined) throw new Refusal(404, "AGENT_NOT_FOUND", `no agent ${ticker}`)
  const curve = { vc: row.virtual_coin, vt: row.virtual_token, rt: row.real_token }
  const q = side === "buy" ? quoteBuy(curve, amount) : quoteSell(curve, amount)
  if (q === undefined) throw new Refusal(400, "TRADE_TOO_SMALL", "the trade is too small")
  return q
}

/** A trade's journal legs (wallet, curve, the fee split between the agent and the treasury) and the agent's fee. */
export const tradeLegs = (side, ticker, wallet, q) => {
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
  return { legs, agentFee }
}

/** The outbox event of a committed trade, as Keel's /api/stream sends it. */
export const tradeEvent = (tradeId, ticker, side, address, q, now) => ({
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
})

/** The trade's JSON answer, the wallet's coin balance after it included. */
export const receipt = (side, q, balance) => {
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
}

/**
 * The bench's initial state (BENCH_SETUP): the agent and its curve at Keel's launch parameters, the launch's
 * entry, and per wallet its API key (by SHA-256) and its minted coin, as journal entries.
 */
export const initialState = () => {
  const setup = JSON.parse(fs.readFileSync(process.env.BENCH_SETUP, "utf8"))
  const { ticker } = setup
  const realToken = defaultLaunch.realToken
  return {
    ticker,
    curve: [ticker, defaultLaunch.virtualCoin, defaultLaunch.virtualToken, realToken],
    entries: [
      [
        "launch",
        ticker,
        [
          [`system:issuance:${ticker}`, ticker, -realToken],
          [`curve:${ticker}`, ticker, realToken]
        ]
      ],
      ...setup.wallets.map(({ address }) => {
        const amount = BigInt(setup.mint) * UNIT
        return [
          "mint",
          "bench",
          [
            ["system:issuance", COIN, -amount],
            [`wallet:${address.toLowerCase()}`, COIN, amount]
          ]
        ]
      })
    ],
    keys: setup.wallets.map(({ address, key }, i) => [`key_${i}`, sha256(key), address.toLowerCase()])
  }
}

const TRADE = /^\/api\/tokens\/([A-Za-z0-9]{1,16})\/(buy|sell)$/
const BEARER = /^Bearer ([A-Za-z0-9_-]{8,200})$/
const ADDRESS = /^0x[0-9a-fA-F]{40}$/
const send = (res, status, body) => {
  const text = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
  res.end(text)
}
const refuse = (res, status, code, detail) => send(res, status, { code, detail })
const failed = (res, e) =>
  e instanceof Refusal ? refuse(res, e.status, e.code, e.message) : refuse(res, 500, "INTERNAL", String(e))

/**
 * The HTTP server on BENCH_PORT: `POST /api/tokens/{ticker}/buy|sell` checked and handed to `trade(side, ticker,
 * keyHash, userId, amount)`, which answers the receipt (SQLite) or a promise of it (PostgreSQL); `/api/health`.
 */
export const serve = (trade) =>
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
          let answer
          try {
            answer = trade(match[2], match[1].toUpperCase(), sha256(bearer[1]), user_id, toUnits(amount))
          } catch (e) {
            return failed(res, e)
          }
          if (answer instanceof Promise)
            answer.then(
              (r) => send(res, 200, r),
              (e) => failed(res, e)
            )
          else send(res, 200, answer)
        })
        return
      }
      if (req.url === "/api/health") return send(res, 200, { status: "ok" })
      res.writeHead(404).end()
    })
    .listen(Number(process.env.BENCH_PORT), "127.0.0.1")
