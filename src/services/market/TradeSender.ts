import { Cause, Duration, Effect, Either, Exit, Option } from "effect"
import { Overloaded, TradeOutcomeUnknown } from "../../contracts/market/Errors.js"
import {
  MarketAgent,
  type OrderRefusal,
  type TradeOrder,
  type TradeOutcome
} from "../../contracts/market/MarketAgent.js"
import { makeGroupCommit } from "../platform/hot/GroupCommit.js"
import { MarketConfig } from "./MarketConfig.js"

type TradeRefusalError = typeof OrderRefusal.Type | Overloaded | TradeOutcomeUnknown

const OVERLOAD_RETRY_SECONDS = 1

/** A trade not taken (its ticker's queue is full): nothing was done, the client may retry. */
const overloaded = new Overloaded({
  code: "OVERLOADED",
  retry_after_seconds: OVERLOAD_RETRY_SECONDS,
  detail: "this token's trade queue is full; nothing was done, retry shortly"
})

/** A trade whose actor did not answer in time: it may still be applied; its id finds its one outcome. */
const outcomeUnknown = (order: TradeOrder, timeout: Duration.Duration) => {
  const key = order.idempotency?.key ?? null
  return new TradeOutcomeUnknown({
    code: "TRADE_OUTCOME_UNKNOWN",
    retry_after_seconds: OVERLOAD_RETRY_SECONDS,
    idempotency_key: key,
    detail:
      `no answer from the token's actor within ${Duration.format(timeout)}; the order may still be applied. ` +
      (key === null
        ? "Check the balance before sending it again"
        : "Send the same order again with this Idempotency-Key to get its one outcome")
  })
}

/** Orders per `TradeBatch` message at most: bounds one group's transaction. */
const BATCH_MAX = 64

export class TradeSender extends Effect.Service<TradeSender>()("market/TradeSender", {
  scoped: Effect.gen(function* () {
    const client = yield* MarketAgent.client
    const config = yield* MarketConfig
    /** Orders of a ticker on their way or waiting, in this process. */
    const inFlight = new Map<string, number>()

    /**
     * One batch to the ticker's actor, one `TradeBatch` message: each order's result as its exit. A batch the
     * mailbox refused (full, or a message its storage did not take) was not applied: each order `Overloaded`.
     */
    const sendBatch = (ticker: string, orders: ReadonlyArray<TradeOrder>) =>
      client(ticker)
        .TradeBatch({ orders })
        .pipe(
          Effect.map((results) =>
            results.map(
              (result): Exit.Exit<TradeOutcome, TradeRefusalError> =>
                Either.isRight(result) ? Exit.succeed(result.right) : Exit.fail(result.left)
            )
          ),
          Effect.catchAllCause((cause) =>
            Option.isSome(Cause.failureOption(cause))
              ? Effect.succeed(orders.map(() => Exit.fail(overloaded)))
              : Effect.failCause(cause as Cause.Cause<never>)
          )
        )

    const batches = yield* makeGroupCommit({ commit: sendBatch, maxGroup: BATCH_MAX })

    /**
     * Places `order` with `ticker`'s actor: its receipt, its refusal, `Overloaded`, or — no answer within
     * `MARKET_TRADE_TIMEOUT` — `TradeOutcomeUnknown`. The wait is cut, not the order: its group still goes (or
     * went) to the actor, and it still counts against the ticker's queue until the actor answers.
     */
    const place = (ticker: string, order: TradeOrder): Effect.Effect<TradeOutcome, TradeRefusalError> =>
      Effect.suspend(() => {
        const count = inFlight.get(ticker) ?? 0
        if (count >= config.tradeQueue) return Effect.fail(overloaded)
        inFlight.set(ticker, count + 1)
        return batches
          .submit(ticker, order, () => inFlight.set(ticker, (inFlight.get(ticker) ?? 1) - 1))
          .pipe(
            Effect.timeoutFail({
              duration: config.tradeTimeout,
              onTimeout: () => outcomeUnknown(order, config.tradeTimeout)
            })
          )
      })

    return { place } as const
  })
}) {}
