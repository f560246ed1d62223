import { Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { Effect, Layer, Schedule, Schema } from "effect"
import { Agents } from "../services/market/Agents.js"
import { CoinHistory } from "../services/market/CoinPrice.js"
import {
  AgentNotFound,
  AgentNotTrading,
  CurveComplete,
  IdempotencyKeyReused,
  OrderNotFilled,
  SlippageExceeded,
  TradeTooSmall
} from "../services/market/Errors.js"
import { InsufficientFunds } from "../services/market/Ledger.js"
import { MarketConfig } from "../services/market/MarketConfig.js"
import { TradeOrder, TradeOutcome, Trading } from "../services/market/Trading.js"

/**
 * One actor per agent, keyed by ticker: its trades and its cost accrual are handled one at a time,
 * while different tickers run side by side. All state is in SQL (Trading, Agents), so passivation
 * or a restart loses nothing; messages are volatile because an HTTP caller waits for the answer.
 */
export const MarketAgent = Entity.make("MarketAgent", [
  Rpc.make("Trade", {
    payload: TradeOrder,
    success: TradeOutcome,
    error: Schema.Union(
      AgentNotFound,
      AgentNotTrading,
      SlippageExceeded,
      TradeTooSmall,
      CurveComplete,
      OrderNotFilled,
      InsufficientFunds,
      IdempotencyKeyReused
    )
  }),
  Rpc.make("Accrue", { success: Schema.BigInt, error: AgentNotFound })
])

export const MarketAgentLive = MarketAgent.toLayer(
  Effect.gen(function* () {
    const trading = yield* Trading
    const agents = yield* Agents
    const { entityId: ticker } = yield* Entity.CurrentAddress
    return MarketAgent.of({
      // The actor's own ticker is authoritative: an order can only ever trade the token it was sent to.
      Trade: ({ payload }) => trading.trade({ ...payload, ticker }),
      Accrue: () => agents.accrue(ticker)
    })
  }),
  {
    maxIdleTime: "5 minutes",
    // A defect (a bug, a broken database) fails the one request that hit it, as a 500 to its caller,
    // instead of restarting the actor and replaying the request forever.
    disableFatalDefects: true
  }
)

/**
 * The marketplace's clocks: every burn interval each burning agent's actor charges what it owes
 * (the amount follows elapsed time, so a late or missed tick loses nothing), and the coin's price
 * is sampled into its history. The first tick runs at start, catching up after downtime.
 */
export const MarketScheduleLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const config = yield* MarketConfig
    const agents = yield* Agents
    const history = yield* CoinHistory
    const actor = yield* MarketAgent.client
    const accrueAll = Effect.gen(function* () {
      for (const ticker of yield* agents.burning) {
        yield* actor(ticker)
          .Accrue()
          .pipe(
            Effect.catchAllCause((cause) =>
              Effect.logWarning("cost accrual failed", cause).pipe(Effect.annotateLogs("ticker", ticker))
            )
          )
      }
    })
    yield* Effect.forkScoped(Effect.repeat(accrueAll, Schedule.spaced(config.burnInterval)))
    yield* Effect.forkScoped(
      Effect.repeat(
        history.sample.pipe(Effect.catchAllCause((cause) => Effect.logWarning("coin price sample failed", cause))),
        Schedule.spaced(config.priceSampleInterval)
      )
    )
  })
)
