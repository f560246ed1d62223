import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Clock, Effect } from "effect"
import {
  AgentExists,
  type AgentNotFound,
  AgentNotTrading,
  agentNotFound,
  CurveComplete,
  type InsufficientFunds,
  OrderNotFilled,
  SlippageExceeded,
  TradeTooSmall
} from "../../contracts/market/Errors.js"
import { type Program, SqlDirect, type Statements } from "../platform/SqlDirect.js"
import { orDieSql } from "../platform/SqlEdge.js"
import { refuse } from "../platform/SyncSql.js"
import { TREASURY } from "./Accounts.js"
import { BPS, type CurveState, quoteBuy, quoteSell } from "./BondingCurve.js"
import { COIN, Ledger, type Leg, postEntry, type UnbalancedEntry } from "./Ledger.js"
import { UNIT } from "./Units.js"

export interface MarketSettings {
  /** Fee on every trade, in basis points (MARKET_FEE_BPS, default 100 = 1 %). */
  readonly feeBps: bigint
  /** The agent's share of each fee (MARKET_AGENT_FEE_SHARE_BPS); the rest goes to the treasury. */
  readonly agentShareBps: bigint
}

/**
 * pump.fun's curve shape (virtual reserves 30 coin × 1.073 supply, 79.31 % of the supply sold on
 * the curve) on a 1,000,000-token supply: in nano-units that is 10^15, so every token amount is
 * still exact as a JSON number (doubles are exact up to 2^53 ≈ 9·10^15).
 */
export const defaultLaunch: CurveState = {
  virtualCoin: 30n * UNIT,
  virtualToken: 1_073_000n * UNIT,
  realToken: 793_100n * UNIT
}

export const curveAccount = (ticker: string) => `curve:${ticker}`
export const agentAccount = (ticker: string) => `agent:${ticker}`
/** A wallet's ledger account; addresses are kept lowercase (answered in EIP-55 form). */
export const walletAccount = (address: string) => `wallet:${address.toLowerCase()}`
const tokenIssuance = (ticker: string) => `system:issuance:${ticker}`

export interface TradeResult {
  readonly ticker: string
  readonly side: "buy" | "sell"
  /** Buy: coin spent, fee included. Sell: coin received, fee deducted. */
  readonly coin: bigint
  /** Coin that moved in or out of the curve: what the unit price applies to. */
  readonly curveCoin: bigint
  readonly tokens: bigint
  readonly fee: bigint
  /** A buy the curve could only fill in part (it ran out of tokens); always false for a sell. */
  readonly partial: boolean
  /** The fee's share credited to the agent (the rest went to the treasury). */
  readonly agentFee: bigint
  /** The curve after the trade (its marginal price is virtualCoin / virtualToken). */
  readonly next: CurveState
  readonly entryId: number
  readonly tradeId: number
  readonly createdAt: number
  /** The wallet's coin balance right after the trade. */
  readonly walletCoinAfter: bigint
}

/** Why a trade was refused (nothing of it was done). */
export type TradeRefusal =
  | AgentNotFound
  | AgentNotTrading
  | CurveComplete
  | TradeTooSmall
  | OrderNotFilled
  | SlippageExceeded
  | InsufficientFunds

const MARKET_OF = `SELECT c.virtual_coin, c.virtual_token, c.real_token, a.status FROM market_curves c
    LEFT JOIN market_agents a ON a.ticker = c.ticker WHERE c.ticker = ?`
/**
 * On PostgreSQL the curve row is locked until commit: a trade reads the curve, computes and writes it back, which
 * is safe only while no other writer of the ticker can slip in between (on SQLite, one writer at a time).
 */
const MARKET_OF_LOCKED = `${MARKET_OF} FOR UPDATE OF c`

/**
 * A token's curve and its agent's status (null for a bare curve launched without an agent), read on `db`; `lock`
 * (a trade, which writes the curve back) locks the curve's row on PostgreSQL.
 */
export function* marketOf(db: Statements, ticker: string, lock = false) {
  const [row] = yield* db.all<{
    virtual_coin: bigint
    virtual_token: bigint
    real_token: bigint
    status: string | null
  }>(lock && db.dialect === "pg" ? MARKET_OF_LOCKED : MARKET_OF, [ticker])
  if (row === undefined) return refuse(agentNotFound(ticker))
  return {
    curve: {
      virtualCoin: BigInt(row.virtual_coin),
      virtualToken: BigInt(row.virtual_token),
      realToken: BigInt(row.real_token)
    } satisfies CurveState,
    status: row.status
  }
}

/** A token trades while its agent runs; a bare curve (library use) always trades. */
function* tradableCurve(db: Statements, ticker: string) {
  const { curve, status } = yield* marketOf(db, ticker, true)
  if (status !== null && status !== "running")
    refuse(
      new AgentNotTrading({
        code: "AGENT_NOT_TRADING",
        ticker,
        agent_status: status,
        detail: `${ticker} is ${status}: its token does not trade`
      })
    )
  return curve
}

const splitFee = (fee: bigint, settings: MarketSettings) => {
  const agent = (fee * settings.agentShareBps) / BPS // rounds down: the remainder is the platform's
  return { agent, treasury: fee - agent }
}

/**
 * The shared tail of a buy and a sell: one journal entry (the trade's legs plus the fee split between agent
 * and treasury), the curve moved, the trade recorded.
 */
function* settle(
  db: Statements,
  wallet: string,
  trade: Omit<TradeResult, "entryId" | "tradeId" | "agentFee" | "createdAt" | "walletCoinAfter">,
  legs: ReadonlyArray<Leg>,
  settings: MarketSettings,
  now: number
): Program<TradeResult> {
  const split = splitFee(trade.fee, settings)
  const posted = yield* postEntry(
    db,
    trade.side,
    trade.ticker,
    [
      ...legs,
      { account: agentAccount(trade.ticker), asset: COIN, amount: split.agent },
      { account: TREASURY, asset: COIN, amount: split.treasury }
    ],
    now
  )
  yield* db.run("UPDATE market_curves SET virtual_coin = ?, virtual_token = ?, real_token = ? WHERE ticker = ?", [
    trade.next.virtualCoin,
    trade.next.virtualToken,
    trade.next.realToken,
    trade.ticker
  ])
  // A curve launched without an agent (library use) has no row here, and nothing to credit.
  yield* db.run("UPDATE market_agents SET total_revenue = total_revenue + ? WHERE ticker = ?", [
    split.agent,
    trade.ticker
  ])
  const row = yield* db.all<{ id: bigint }>(
    `INSERT INTO market_trades
    (ticker, wallet, side, coin, tokens, fee, entry_id, created_at, virtual_coin_after, virtual_token_after)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
    [
      trade.ticker,
      wallet,
      trade.side,
      trade.coin,
      trade.tokens,
      trade.fee,
      posted.id,
      now,
      trade.next.virtualCoin,
      trade.next.virtualToken
    ]
  )
  return {
    ...trade,
    entryId: posted.id,
    tradeId: Number(row[0]!.id),
    agentFee: split.agent,
    createdAt: now,
    walletCoinAfter: posted.balanceAfter(wallet, COIN)
  }
}

/**
 * Spends up to `coinIn` on `ticker` for `wallet` (a ledger account), on `db` inside its transaction (which
 * must roll back when this refuses); `minTokensOut` guards against slippage, `fillOrKill` refuses a partial
 * fill.
 */
export function* buyIn(
  db: Statements,
  order: {
    readonly ticker: string
    readonly wallet: string
    readonly coinIn: bigint
    readonly settings: MarketSettings
    readonly minTokensOut: bigint
    readonly fillOrKill: boolean
  },
  now: number
): Program<TradeResult> {
  const { ticker, wallet, settings } = order
  const curve = yield* tradableCurve(db, ticker)
  if (curve.realToken <= 0n)
    refuse(
      new CurveComplete({
        code: "CURVE_COMPLETE",
        ticker,
        detail: `${ticker} is sold out: its curve has no tokens left to buy`
      })
    )
  const quote = quoteBuy(curve, order.coinIn, settings.feeBps)
  if (quote === undefined)
    return refuse(new TradeTooSmall({ code: "TRADE_TOO_SMALL", detail: "the amount buys no token" }))
  if (order.fillOrKill && quote.partial)
    refuse(
      new OrderNotFilled({
        code: "ORDER_NOT_FILLED",
        detail: "fill_or_kill: the curve can fill only part of this buy; nothing was traded"
      })
    )
  if (quote.tokensOut < order.minTokensOut)
    refuse(
      new SlippageExceeded({
        code: "SLIPPAGE_EXCEEDED",
        detail: "the trade would give fewer tokens than min_tokens_out"
      })
    )
  return yield* settle(
    db,
    wallet,
    {
      ticker,
      side: "buy",
      coin: quote.cost,
      curveCoin: quote.net,
      tokens: quote.tokensOut,
      fee: quote.fee,
      partial: quote.partial,
      next: quote.next
    },
    [
      { account: wallet, asset: COIN, amount: -quote.cost },
      { account: curveAccount(ticker), asset: COIN, amount: quote.net },
      { account: curveAccount(ticker), asset: ticker, amount: -quote.tokensOut },
      { account: wallet, asset: ticker, amount: quote.tokensOut }
    ],
    settings,
    now
  )
}

/** Sells `tokensIn` of `ticker` for `wallet` on `db` inside its transaction; `minCoinOut` guards against slippage. */
export function* sellIn(
  db: Statements,
  order: {
    readonly ticker: string
    readonly wallet: string
    readonly tokensIn: bigint
    readonly settings: MarketSettings
    readonly minCoinOut: bigint
  },
  now: number
): Program<TradeResult> {
  const { ticker, wallet, tokensIn, settings } = order
  const curve = yield* tradableCurve(db, ticker)
  const quote = quoteSell(curve, tokensIn, settings.feeBps)
  if (quote === undefined)
    return refuse(new TradeTooSmall({ code: "TRADE_TOO_SMALL", detail: "the tokens are worth no coin" }))
  if (quote.coinOut < order.minCoinOut)
    refuse(new SlippageExceeded({ code: "SLIPPAGE_EXCEEDED", detail: "the trade would pay less than min_coin_out" }))
  return yield* settle(
    db,
    wallet,
    {
      ticker,
      side: "sell",
      coin: quote.coinOut,
      curveCoin: quote.gross,
      tokens: tokensIn,
      fee: quote.fee,
      partial: false,
      next: quote.next
    },
    [
      { account: wallet, asset: ticker, amount: -tokensIn },
      { account: curveAccount(ticker), asset: ticker, amount: tokensIn },
      { account: curveAccount(ticker), asset: COIN, amount: -quote.gross },
      { account: wallet, asset: COIN, amount: quote.coinOut }
    ],
    settings,
    now
  )
}

/**
 * Token markets on bonding curves, settled in the ledger: one transaction per trade holds the curve
 * update, the journal entry (coin and token legs, fee split between agent and treasury) and the trade row.
 */
export class TokenMarket extends Effect.Service<TokenMarket>()("market/TokenMarket", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const direct = yield* SqlDirect
    const ledger = yield* Ledger

    /** A token's curve now (a read on the client's connection, or in the caller's transaction). */
    const curveOf = (ticker: string) =>
      direct
        .readProgram<CurveState, AgentNotFound>(function* (db) {
          return (yield* marketOf(db, ticker)).curve
        })
        .pipe(orDieSql)

    /** Creates a token's curve and issues its sellable supply to the curve. */
    const launch = Effect.fn("TokenMarket.launch")(function* (ticker: string, curve: CurveState = defaultLaunch) {
      const now = yield* Clock.currentTimeMillis
      yield* Effect.gen(function* () {
        // A ticker launches once: a second launch is a refusal the caller can act on, not a constraint violation.
        const existing = yield* sql`SELECT 1 FROM market_curves WHERE ticker = ${ticker}`
        if (existing.length > 0)
          return yield* new AgentExists({ code: "AGENT_EXISTS", ticker, detail: `ticker ${ticker} is taken` })
        // Two launches at once (PostgreSQL) both pass the check: the later insert waits on the primary key, then
        // inserts nothing, and is refused the same way.
        const inserted =
          yield* sql`INSERT INTO market_curves (ticker, virtual_coin, virtual_token, real_token, launched_at)
          VALUES (${ticker}, ${curve.virtualCoin}, ${curve.virtualToken}, ${curve.realToken}, ${now})
          ON CONFLICT (ticker) DO NOTHING RETURNING ticker`.pipe(Effect.orDie)
        if (inserted.length === 0)
          return yield* new AgentExists({ code: "AGENT_EXISTS", ticker, detail: `ticker ${ticker} is taken` })
        yield* ledger.post("launch", ticker, [
          { account: tokenIssuance(ticker), asset: ticker, amount: -curve.realToken },
          { account: curveAccount(ticker), asset: ticker, amount: curve.realToken }
        ])
      }).pipe(sql.withTransaction, Effect.catchTags({ SqlError: Effect.die, UnbalancedEntry: Effect.die }))
    })

    /** An unbalanced entry or a failed statement is a defect here, not a refusal a caller could act on. */
    const atomically = <A>(effect: Effect.Effect<A, TradeRefusal | UnbalancedEntry | SqlError>) =>
      Effect.catchIf(
        effect,
        (e): e is SqlError | UnbalancedEntry => e._tag === "SqlError" || e._tag === "UnbalancedEntry",
        Effect.die
      )

    /** A buy in its own transaction (or a savepoint of the caller's): nothing changes on failure. */
    const buy = (ticker: string, wallet: string, coinIn: bigint, settings: MarketSettings, minTokensOut = 0n) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        direct.transactionProgram<TradeResult, TradeRefusal | UnbalancedEntry>((db) =>
          buyIn(db, { ticker, wallet, coinIn, settings, minTokensOut, fillOrKill: false }, now)
        )
      ).pipe(atomically, Effect.withSpan("TokenMarket.buy"))

    /** A sell in its own transaction (or a savepoint of the caller's): nothing changes on failure. */
    const sell = (ticker: string, wallet: string, tokensIn: bigint, settings: MarketSettings, minCoinOut = 0n) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        direct.transactionProgram<TradeResult, TradeRefusal | UnbalancedEntry>((db) =>
          sellIn(db, { ticker, wallet, tokensIn, settings, minCoinOut }, now)
        )
      ).pipe(atomically, Effect.withSpan("TokenMarket.sell"))

    return { launch, buy, sell, curve: curveOf } as const
  }),
  dependencies: [SqlDirect.Default]
}) {}
