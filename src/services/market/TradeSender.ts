import { Cause, Effect, Either, Exit, Option, Runtime } from "effect"
import { Overloaded } from "../../contracts/market/Errors.js"
import {
  MarketAgent,
  type OrderRefusal,
  type TradeOrder,
  type TradeOutcome
} from "../../contracts/market/MarketAgent.js"
import { MarketConfig } from "./MarketConfig.js"

type TradeRefusalError = typeof OrderRefusal.Type | Overloaded

const OVERLOAD_RETRY_SECONDS = 1

/** A trade not taken (its ticker's queue is full): nothing was done, the client may retry. */
const overloaded = new Overloaded({
  code: "OVERLOADED",
  retry_after_seconds: OVERLOAD_RETRY_SECONDS,
  detail: "this token's trade queue is full; nothing was done, retry shortly"
})

/** Orders per `TradeBatch` message at most: bounds one group's transaction. */
const BATCH_MAX = 64

interface Waiting {
  readonly order: TradeOrder
  readonly resume: (exit: Exit.Exit<TradeOutcome, TradeRefusalError>) => void
}

/**
 * Sends orders to their tickers' actors, one sender per process (`Trades`' private client: the `HttpApi` route
 * and the fast path share it through `Trades.place`, so a ticker's orders keep their arrival order and its cap). The orders submitted for one ticker travel
 * as **one** `TradeBatch` message (at most `BATCH_MAX` orders), so they cross the actor hop (client,
 * envelope, mailbox, RPC server, reply) once instead of once each; the actor applies them in arrival order in
 * its group commit and answers each with its own result. A batch leaves after the event loop's turn in which
 * its first order arrived; the batches on their way queue in the actor's mailbox, which takes them all into
 * its next group. (Holding the next batch until the previous one was answered did not pay: the actor idles
 * between them.) At most `MARKET_TRADE_QUEUE` orders of a ticker are on their way or waiting per process:
 * past that an order is refused at once as `Overloaded` (503), as is a batch the actor's mailbox did not
 * take. Nothing of a refused order was done.
 */
export class TradeSender extends Effect.Service<TradeSender>()("market/TradeSender", {
  effect: Effect.gen(function* () {
    const client = yield* MarketAgent.client
    const config = yield* MarketConfig
    const runtime = yield* Effect.runtime<never>()
    const waiting = new Map<string, Array<Waiting>>()
    const inFlight = new Map<string, number>()

    const settle = (ticker: string, waiter: Waiting, exit: Exit.Exit<TradeOutcome, TradeRefusalError>) => {
      inFlight.set(ticker, (inFlight.get(ticker) ?? 1) - 1)
      waiter.resume(exit)
    }

    /** Each waiter of `batch` answered once, whatever ended the call (an interruption included). */
    const answerAll = (
      ticker: string,
      batch: ReadonlyArray<Waiting>,
      exit: Exit.Exit<ReadonlyArray<Either.Either<TradeOutcome, TradeRefusalError>>, unknown>
    ) => {
      if (Exit.isSuccess(exit)) {
        batch.forEach((waiter, i) => {
          const result = exit.value[i]
          settle(
            ticker,
            waiter,
            result === undefined
              ? Exit.die("the actor answered fewer results than orders")
              : Either.isRight(result)
                ? Exit.succeed(result.right)
                : Exit.fail(result.left)
          )
        })
        return
      }
      // The mailbox refused the batch (full, or a message its storage did not take): not applied.
      const failed = Option.isSome(Cause.failureOption(exit.cause))
        ? Exit.fail(overloaded)
        : Exit.failCause(exit.cause as Cause.Cause<never>)
      for (const waiter of batch) settle(ticker, waiter, failed)
    }

    const send = (ticker: string): void => {
      const queued = waiting.get(ticker) ?? []
      waiting.delete(ticker)
      for (let start = 0; start < queued.length; start += BATCH_MAX) {
        const batch = queued.slice(start, start + BATCH_MAX)
        Runtime.runFork(runtime)(
          Effect.onExit(client(ticker).TradeBatch({ orders: batch.map((waiter) => waiter.order) }), (exit) =>
            Effect.sync(() => answerAll(ticker, batch, exit))
          )
        )
      }
    }

    /** Places `order` with `ticker`'s actor: its receipt, its refusal, or `Overloaded`. */
    const place = (ticker: string, order: TradeOrder) =>
      Effect.async<TradeOutcome, TradeRefusalError>((resume) => {
        const count = inFlight.get(ticker) ?? 0
        if (count >= config.tradeQueue) return resume(Effect.fail(overloaded))
        inFlight.set(ticker, count + 1)
        let batch = waiting.get(ticker)
        if (batch === undefined) {
          batch = []
          waiting.set(ticker, batch)
          setImmediate(() => send(ticker))
        }
        batch.push({ order, resume: (exit) => resume(exit) })
      })

    return { place } as const
  })
}) {}
