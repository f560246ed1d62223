import { HttpApiSchema } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Schema } from "effect"
import { BPS, type CurveState, quoteBuy, quoteSell } from "./BondingCurve.js"
import { COIN, exactIntegers as exact, Ledger, type Leg } from "./Ledger.js"
import { UNIT } from "./Units.js"

export class UnknownToken extends Schema.TaggedError<UnknownToken>()(
  "UnknownToken",
  { code: Schema.Literal("AGENT_NOT_FOUND"), ticker: Schema.String, detail: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}

export class SlippageExceeded extends Schema.TaggedError<SlippageExceeded>()(
  "SlippageExceeded",
  { code: Schema.Literal("SLIPPAGE_EXCEEDED"), detail: Schema.String },
  HttpApiSchema.annotations({ status: 409 })
) {}

export class TradeTooSmall extends Schema.TaggedError<TradeTooSmall>()(
  "TradeTooSmall",
  { code: Schema.Literal("TRADE_TOO_SMALL"), detail: Schema.String },
  HttpApiSchema.annotations({ status: 422 })
) {}

export interface MarketSettings {
  /** Fee on every trade, in basis points (MARKET_FEE_BPS, default 100 = 1 %). */
  readonly feeBps: bigint
  /** The agent's share of each fee (MARKET_AGENT_FEE_SHARE_BPS); the rest goes to the treasury. */
  readonly agentShareBps: bigint
}

/** pump.fun's launch parameters, scaled to nano-units. */
export const defaultLaunch: CurveState = {
  virtualCoin: 30n * UNIT,
  virtualToken: 1_073_000_000n * UNIT,
  realToken: 793_100_000n * UNIT
}

export const TREASURY = "platform:treasury"
export const curveAccount = (ticker: string) => `curve:${ticker}`
export const agentAccount = (ticker: string) => `agent:${ticker}`
const tokenIssuance = (ticker: string) => `system:issuance:${ticker}`

export interface TradeResult {
  readonly ticker: string
  readonly side: "buy" | "sell"
  readonly coin: bigint
  readonly tokens: bigint
  readonly fee: bigint
  readonly entryId: number
}

/**
 * Token markets on bonding curves, settled in the ledger: one transaction per trade holds the curve
 * update, the journal entry (coin and token legs, fee split between agent and treasury) and the trade row.
 */
export class TokenMarket extends Effect.Service<TokenMarket>()("market/TokenMarket", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const ledger = yield* Ledger

    const curveOf = (ticker: string) =>
      exact(
        sql<{ virtual_coin: bigint; virtual_token: bigint; real_token: bigint }>`
          SELECT virtual_coin, virtual_token, real_token FROM market_curves WHERE ticker = ${ticker}`
      ).pipe(
        Effect.orDie,
        Effect.flatMap((rows) =>
          rows[0] === undefined
            ? Effect.fail(new UnknownToken({ code: "AGENT_NOT_FOUND", ticker, detail: `no token ${ticker}` }))
            : Effect.succeed<CurveState>({
                virtualCoin: BigInt(rows[0].virtual_coin),
                virtualToken: BigInt(rows[0].virtual_token),
                realToken: BigInt(rows[0].real_token)
              })
        )
      )

    const saveCurve = (ticker: string, curve: CurveState) =>
      sql`UPDATE market_curves SET virtual_coin = ${curve.virtualCoin}, virtual_token = ${curve.virtualToken},
        real_token = ${curve.realToken} WHERE ticker = ${ticker}`.pipe(Effect.orDie)

    /** Creates a token's curve and issues its sellable supply to the curve. */
    const launch = Effect.fn("TokenMarket.launch")(function* (ticker: string, curve: CurveState = defaultLaunch) {
      const now = yield* Clock.currentTimeMillis
      yield* Effect.gen(function* () {
        yield* sql`INSERT INTO market_curves (ticker, virtual_coin, virtual_token, real_token, launched_at)
          VALUES (${ticker}, ${curve.virtualCoin}, ${curve.virtualToken}, ${curve.realToken}, ${now})`.pipe(
          Effect.orDie
        )
        yield* ledger.post("launch", ticker, [
          { account: tokenIssuance(ticker), asset: ticker, amount: -curve.realToken },
          { account: curveAccount(ticker), asset: ticker, amount: curve.realToken }
        ])
      }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))
    })

    const splitFee = (fee: bigint, settings: MarketSettings) => {
      const agent = (fee * settings.agentShareBps) / BPS // rounds down: the remainder is the platform's
      return { agent, treasury: fee - agent }
    }

    /**
     * The shared tail of a buy and a sell: one journal entry (the trade's legs plus the fee split between
     * agent and treasury), the curve moved, the trade recorded. Runs inside the trade's transaction.
     */
    const settle = (
      wallet: string,
      trade: Omit<TradeResult, "entryId">,
      legs: ReadonlyArray<Leg>,
      next: CurveState,
      settings: MarketSettings
    ) =>
      Effect.gen(function* () {
        const split = splitFee(trade.fee, settings)
        const entryId = yield* ledger.post(trade.side, trade.ticker, [
          ...legs,
          { account: agentAccount(trade.ticker), asset: COIN, amount: split.agent },
          { account: TREASURY, asset: COIN, amount: split.treasury }
        ])
        yield* saveCurve(trade.ticker, next)
        const now = yield* Clock.currentTimeMillis
        yield* sql`INSERT INTO market_trades (ticker, wallet, side, coin, tokens, fee, entry_id, created_at)
          VALUES (${trade.ticker}, ${wallet}, ${trade.side}, ${trade.coin}, ${trade.tokens}, ${trade.fee}, ${entryId}, ${now})`.pipe(
          Effect.orDie
        )
        return { ...trade, entryId } satisfies TradeResult
      })

    /** Spends up to `coinIn` on `ticker`; `minTokensOut` guards against slippage. Nothing changes on failure. */
    const buy = Effect.fn("TokenMarket.buy")(function* (
      ticker: string,
      wallet: string,
      coinIn: bigint,
      settings: MarketSettings,
      minTokensOut = 0n
    ) {
      return yield* Effect.gen(function* () {
        const curve = yield* curveOf(ticker)
        const quote = quoteBuy(curve, coinIn, settings.feeBps)
        if (quote === undefined) {
          return yield* new TradeTooSmall({ code: "TRADE_TOO_SMALL", detail: "the amount buys no token" })
        }
        if (quote.tokensOut < minTokensOut) {
          return yield* new SlippageExceeded({
            code: "SLIPPAGE_EXCEEDED",
            detail: "the trade would give fewer tokens than min_tokens_out"
          })
        }
        return yield* settle(
          wallet,
          { ticker, side: "buy", coin: quote.cost, tokens: quote.tokensOut, fee: quote.fee },
          [
            { account: wallet, asset: COIN, amount: -quote.cost },
            { account: curveAccount(ticker), asset: COIN, amount: quote.net },
            { account: curveAccount(ticker), asset: ticker, amount: -quote.tokensOut },
            { account: wallet, asset: ticker, amount: quote.tokensOut }
          ],
          quote.next,
          settings
        )
      }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))
    })

    /** Sells `tokensIn` of `ticker`; `minCoinOut` guards against slippage. Nothing changes on failure. */
    const sell = Effect.fn("TokenMarket.sell")(function* (
      ticker: string,
      wallet: string,
      tokensIn: bigint,
      settings: MarketSettings,
      minCoinOut = 0n
    ) {
      return yield* Effect.gen(function* () {
        const curve = yield* curveOf(ticker)
        const quote = quoteSell(curve, tokensIn, settings.feeBps)
        if (quote === undefined) {
          return yield* new TradeTooSmall({ code: "TRADE_TOO_SMALL", detail: "the tokens are worth no coin" })
        }
        if (quote.coinOut < minCoinOut) {
          return yield* new SlippageExceeded({
            code: "SLIPPAGE_EXCEEDED",
            detail: "the trade would pay less than min_coin_out"
          })
        }
        return yield* settle(
          wallet,
          { ticker, side: "sell", coin: quote.coinOut, tokens: tokensIn, fee: quote.fee },
          [
            { account: wallet, asset: ticker, amount: -tokensIn },
            { account: curveAccount(ticker), asset: ticker, amount: tokensIn },
            { account: curveAccount(ticker), asset: COIN, amount: -quote.gross },
            { account: wallet, asset: COIN, amount: quote.coinOut }
          ],
          quote.next,
          settings
        )
      }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))
    })

    return { launch, buy, sell, curve: curveOf } as const
  })
}) {}
