import { Clock, Effect, Exit } from "effect"
import { IdempotencyKeyReused } from "../../contracts/market/Errors.js"
import type { TradeOrder, TradeOutcome } from "../../contracts/market/MarketAgent.js"
import type { TradeReceipt } from "../../contracts/market/Receipts.js"
import { hotSpan } from "../platform/HotSpan.js"
import { type Program, SqlDirect, type Statements, savepoint, TransactionLost } from "../platform/SqlDirect.js"
import { orDieSql } from "../platform/SqlEdge.js"
import { Refused, refuse } from "../platform/SyncSql.js"
import { writeLine } from "./Chat.js"
import type { UnbalancedEntry } from "./Ledger.js"
import { MarketConfig } from "./MarketConfig.js"
import { appendEvent, MarketEvents } from "./MarketEvents.js"
import { buyIn, sellIn, type TradeRefusal, type TradeResult, walletAccount } from "./TokenMarket.js"
import { fromUnits, plainDecimal, ratioText, toUnits, unitsText } from "./Units.js"
import { checksumAddress } from "./WalletSignature.js"

/** A ratio as a JSON number: prices are not balances, so they keep 12 significant digits (18 in `ratioText`). */
export const priceNumber = (numerator: bigint, denominator: bigint) =>
  denominator === 0n ? 0 : Number((Number(numerator) / Number(denominator)).toPrecision(12))

const IDEMPOTENCY_TTL_MILLIS = 24 * 3_600_000

/**
 * A receipt stored before receipts carried exact decimal text (numbers only) as it is answered now: each
 * number's `_str` from the number itself — exact for every amount up to 2^53 nano-units, which is all an older
 * version could have answered exactly anyway. A receipt that has them is returned as it is.
 */
const withExactFields = (receipt: Record<string, unknown>): Record<string, unknown> => {
  if (typeof receipt.new_balance_str === "string") return receipt
  const upgraded: Record<string, unknown> = {}
  for (const [field, value] of Object.entries(receipt)) {
    upgraded[field] = value
    if (typeof value === "number")
      upgraded[`${field}_str`] = field === "price_per_token" ? plainDecimal(value) : unitsText(toUnits(value))
  }
  return upgraded
}

/** The event /api/stream sends for a committed trade. */
export const tradeEvent = (wallet: string, trade: TradeResult) => ({
  id: String(trade.tradeId),
  ticker: trade.ticker,
  side: trade.side,
  wallet: checksumAddress(wallet),
  // The wallet's side on both: buy = coin paid, fee included; sell = coin received, fee deducted.
  coin: fromUnits(trade.coin),
  coin_str: unitsText(trade.coin),
  // The curve's side: coin that entered it (buy, fee excluded) or left it (sell, before the fee).
  curve_coin: fromUnits(trade.curveCoin),
  curve_coin_str: unitsText(trade.curveCoin),
  tokens: fromUnits(trade.tokens),
  tokens_str: unitsText(trade.tokens),
  fee: fromUnits(trade.fee),
  fee_str: unitsText(trade.fee),
  partial: trade.partial,
  price_per_token: priceNumber(trade.curveCoin, trade.tokens),
  price_per_token_str: ratioText(trade.curveCoin, trade.tokens),
  price: priceNumber(trade.next.virtualCoin, trade.next.virtualToken),
  price_str: ratioText(trade.next.virtualCoin, trade.next.virtualToken),
  created_at: new Date(trade.createdAt).toISOString()
})

/**
 * A trade as the API sees it: the agent must be trading, an Idempotency-Key replays the first
 * result instead of trading twice, and the trade, its stream event, its chat line and the key are
 * committed in one transaction. A trade is a statement program (`SqlDirect.transactionProgram`): one synchronous
 * step on SQLite's hot connection, one transaction on PostgreSQL.
 */
export class Trading extends Effect.Service<Trading>()("market/Trading", {
  effect: Effect.gen(function* () {
    const direct = yield* SqlDirect
    const config = yield* MarketConfig
    const events = yield* MarketEvents

    /**
     * Claims the order's Idempotency-Key before the trade (claim-first): inserts its row, or takes over a row older
     * than the TTL, with an empty response that the trade fills in before it commits. No row back means another
     * transaction holds the key: on PostgreSQL a second claimant waits on the primary key until the first commits
     * (or rolls back, and then its own insert wins), so the row it then reads is the winner's, committed. Answers
     * the receipt to replay, or undefined when this order owns the key (or has none) and trades.
     */
    const claim = function* (db: Statements, order: TradeOrder, now: number): Program<TradeReceipt | undefined> {
      if (order.idempotency === undefined) return undefined
      const { fingerprint, key, principal } = order.idempotency
      const stale = now - IDEMPOTENCY_TTL_MILLIS
      const claimed = yield* db.all<{ key: string }>(
        `INSERT INTO market_idempotency (principal, key, fingerprint, response, created_at) VALUES (?, ?, ?, '', ?)
        ON CONFLICT (principal, key) DO UPDATE SET fingerprint = excluded.fingerprint, response = excluded.response,
        created_at = excluded.created_at WHERE market_idempotency.created_at <= ? RETURNING key`,
        [principal, key, fingerprint, now, stale]
      )
      if (claimed.length > 0) return undefined
      const [row] = yield* db.all<{ fingerprint: string; response: string }>(
        "SELECT fingerprint, response FROM market_idempotency WHERE principal = ? AND key = ?",
        [principal, key]
      )
      // The claim found a live row, so it is there (rows are never deleted before their TTL): a bug otherwise.
      if (row === undefined || row.response === "") throw new Error("an Idempotency-Key's row vanished after its claim")
      if (row.fingerprint !== fingerprint)
        refuse(
          new IdempotencyKeyReused({
            code: "IDEMPOTENCY_KEY_REUSED",
            detail: "this Idempotency-Key was used for a different request"
          })
        )
      return withExactFields(JSON.parse(row.response) as Record<string, unknown>) as TradeReceipt
    }

    const execute = (db: Statements, order: TradeOrder, now: number) =>
      order.side === "buy"
        ? buyIn(
            db,
            {
              ticker: order.ticker,
              wallet: walletAccount(order.wallet),
              coinIn: order.amount,
              settings: config.settings,
              minTokensOut: order.minimum,
              fillOrKill: order.fillOrKill === true
            },
            now
          )
        : sellIn(
            db,
            {
              ticker: order.ticker,
              wallet: walletAccount(order.wallet),
              tokensIn: order.amount,
              settings: config.settings,
              minCoinOut: order.minimum
            },
            now
          )

    const receiptOf = (trade: TradeResult, balance: bigint): TradeReceipt => {
      const common = {
        success: true,
        price_per_token: priceNumber(trade.curveCoin, trade.tokens),
        price_per_token_str: ratioText(trade.curveCoin, trade.tokens),
        fee: fromUnits(trade.fee),
        fee_str: unitsText(trade.fee),
        new_balance: fromUnits(balance),
        new_balance_str: unitsText(balance)
      }
      return trade.side === "buy"
        ? {
            ...common,
            tokens_received: fromUnits(trade.tokens),
            tokens_received_str: unitsText(trade.tokens),
            coin_spent: fromUnits(trade.coin),
            coin_spent_str: unitsText(trade.coin),
            partial: trade.partial
          }
        : {
            ...common,
            coin_received: fromUnits(trade.coin),
            coin_received_str: unitsText(trade.coin),
            tokens_sold: fromUnits(trade.tokens),
            tokens_sold_str: unitsText(trade.tokens),
            partial: false
          }
    }

    /** The chat line of a large trade, when its token has an agent. */
    const tradeLine = function* (db: Statements, wallet: string, trade: TradeResult, now: number): Program<void> {
      const [agent] = yield* db.all<{ name: string }>("SELECT name FROM market_agents WHERE ticker = ?", [trade.ticker])
      if (agent === undefined) return
      const who = `${checksumAddress(wallet).slice(0, 8)}…`
      const verb = trade.side === "buy" ? "bought" : "sold"
      yield* writeLine(
        db,
        { ticker: trade.ticker, name: agent.name },
        `${who} ${verb} ${unitsText(trade.tokens)} ${trade.ticker} for ${unitsText(trade.coin)} coin`,
        "trade",
        now
      )
    }

    /** One trade on `db` inside its transaction (which rolls back when this throws). */
    const tradeIn = function* (db: Statements, order: TradeOrder, now: number): Program<TradeOutcome> {
      const replayed = yield* claim(db, order, now)
      if (replayed !== undefined) return { receipt: replayed, replayed: true }
      const trade = yield* execute(db, order, now)
      const receipt = receiptOf(trade, trade.walletCoinAfter)
      if (order.idempotency !== undefined) {
        const { key, principal } = order.idempotency
        yield* db.run("UPDATE market_idempotency SET response = ? WHERE principal = ? AND key = ?", [
          JSON.stringify(receipt),
          principal,
          key
        ])
      }
      // The events last: on PostgreSQL the first one takes the outbox lock until commit (MarketEvents.ts).
      yield* appendEvent(db, "trade", tradeEvent(order.wallet, trade), now)
      if (trade.coin >= config.chatTradeMin) yield* tradeLine(db, order.wallet, trade, now)
      return { receipt, replayed: false }
    }

    /**
     * A refusal as the order's failure; anything else thrown (a failed statement, an unbalanced entry: a bug)
     * as its defect.
     */
    const exitOf = (thrown: unknown): Exit.Exit<never, TradeRefusal | IdempotencyKeyReused> =>
      !(thrown instanceof Refused)
        ? Exit.die(thrown)
        : thrown.error._tag === "UnbalancedEntry"
          ? Exit.die(thrown.error)
          : Exit.fail(thrown.error)

    const trade = hotSpan("Trading.trade")(function* (order: TradeOrder) {
      const now = yield* Clock.currentTimeMillis
      const outcome = yield* direct
        .transactionProgram<TradeOutcome, TradeRefusal | IdempotencyKeyReused | UnbalancedEntry>((db) =>
          tradeIn(db, order, now)
        )
        .pipe(Effect.catchTags({ SqlError: Effect.die, UnbalancedEntry: Effect.die }))
      if (!outcome.replayed) yield* events.committed
      return outcome
    })

    /**
     * Group commit: `orders` (of one ticker, in arrival order) applied one after another in **one**
     * transaction, each in its own savepoint, so a refused or failed order changes nothing and does not
     * fail the others. Answers each order's exit once the whole group has committed (a commit that
     * fails fails them all: none of them happened).
     */
    const tradeBatch = (orders: ReadonlyArray<TradeOrder>) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const exits = yield* direct
          .transactionProgram(function* (db) {
            const exits: Array<Exit.Exit<TradeOutcome, TradeRefusal | IdempotencyKeyReused>> = []
            for (const order of orders) {
              try {
                exits.push(Exit.succeed(yield* savepoint(db, tradeIn(db, order, now))))
              } catch (thrown) {
                // The engine rolled the whole group back: the orders after this one must not run outside it.
                if (thrown instanceof TransactionLost) throw thrown
                exits.push(exitOf(thrown))
              }
            }
            return exits
          })
          .pipe(orDieSql)
        if (exits.some((exit) => Exit.isSuccess(exit) && !exit.value.replayed)) yield* events.committed
        return exits
      })

    /**
     * Deletes the claims (Idempotency-Keys, and runners mode's order ids) older than their 24 h: a claim that old
     * would be taken over anyway. Runs from the market's schedule; idempotent, so every runner may run it.
     */
    const forgetExpiredClaims = Effect.gen(function* () {
      const stale = (yield* Clock.currentTimeMillis) - IDEMPOTENCY_TTL_MILLIS
      yield* direct.transaction((db) => db.run("DELETE FROM market_idempotency WHERE created_at <= ?", [stale]))
    }).pipe(orDieSql)

    return { trade, tradeBatch, forgetExpiredClaims } as const
  }),
  dependencies: [SqlDirect.Default]
}) {}
