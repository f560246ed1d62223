import { Entity, type Envelope, Singleton } from "@effect/cluster"
import { Cause, Chunk, type Duration, Effect, Either, Exit, Layer, Option, Schedule } from "effect"
import { constant } from "effect/Function"
import { ActorFailed } from "../contracts/market/Errors.js"
import { type Accrue, MarketAgent, type Trade, type TradeBatch } from "../contracts/market/MarketAgent.js"
import { Agents } from "../services/market/Agents.js"
import { CoinHistory } from "../services/market/CoinPrice.js"
import { MarketConfig } from "../services/market/MarketConfig.js"
import { Trading } from "../services/market/Trading.js"

type TradeRequest = Envelope.Request<typeof Trade> | Envelope.Request<typeof TradeBatch>

/**
 * Resumes once the event loop has polled its sockets. Effect runs a request from its parse to its answer in
 * microtasks, so while one trade commits, the others sent at the same time are still unread in their
 * sockets; letting the loop read them first is what lets them reach the mailbox and join the same
 * commit. When nothing else is pending this costs one turn of the loop (microseconds), never a timer.
 */
const afterPendingIo = Effect.async<void>((resume) => {
  const immediate = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(immediate))
})

/**
 * The actor drains its mailbox: every trade queued for its ticker when it looks (single `Trade` messages and
 * the orders of `TradeBatch` messages) is applied in one transaction (group commit, a savepoint per trade),
 * in arrival order, and each caller is answered with its own receipt or refusal once that transaction has
 * committed. Before it takes a group it lets the event loop read what its sockets hold (`afterPendingIo`), so
 * trades sent at the same time share one commit. An accrual runs alone, in its place in the order. The
 * mailbox holds at most `MARKET_TRADE_QUEUE` messages (queued and in progress); past that a sender is told
 * `MailboxFull` at once (`TradeSender` answers it as `Overloaded`: 503 with `Retry-After`).
 */
export const MarketAgentLive = Layer.unwrapEffect(
  Effect.map(MarketConfig, (config) =>
    MarketAgent.toLayerMailbox(
      Effect.gen(function* () {
        const trading = yield* Trading
        const agents = yield* Agents
        const { entityId: ticker } = yield* Entity.CurrentAddress
        /**
         * A message whose transaction failed (a defect, an I/O error) is logged here and answered as
         * `ActorFailed`, never as a defect: sent back as a defect, it would make the cluster restart this actor
         * and replay the message — forever when the failure repeats (a missing table, a full disk), with every
         * later trade of the ticker waiting behind it.
         */
        const failed = (cause: Cause.Cause<unknown>) =>
          Effect.as(
            Effect.logError("market actor: a message failed; nothing of it was applied", cause).pipe(
              Effect.annotateLogs("ticker", ticker)
            ),
            Exit.fail(new ActorFailed({ ticker, detail: "the trade could not be applied; nothing was done" }))
          )
        /** What a batch answers for an order whose trade was interrupted (inside its savepoint: undone). */
        const interrupted = new ActorFailed({ ticker, detail: "the trade was interrupted; nothing was done" })
        /** Typed refusals and interruptions as they are; a defect through `failed`. */
        const answer = <A, E>(exit: Exit.Exit<A, E>): Effect.Effect<Exit.Exit<A, E | ActorFailed>> =>
          Exit.isSuccess(exit) || !Cause.isDie(exit.cause) ? Effect.succeed(exit) : failed(exit.cause)
        return (mailbox, replier) => {
          const accrue = (request: Envelope.Request<typeof Accrue>) =>
            Effect.flatMap(Effect.exit(agents.accrue(ticker)), (exit) =>
              Effect.flatMap(answer(exit), (answered) => replier.complete(request, answered))
            )
          /** Every order of `requests`, in arrival order, in one group commit; each request answered after it. */
          const trades = (requests: ReadonlyArray<TradeRequest>) =>
            Effect.gen(function* () {
              const orders = requests.flatMap((r) => (r.tag === "Trade" ? [r.payload] : r.payload.orders))
              // The actor's own ticker is authoritative: an order can only ever trade the token it was sent to.
              const group = yield* Effect.exit(trading.tradeBatch(orders.map((order) => ({ ...order, ticker }))))
              const exits = Exit.isSuccess(group)
                ? yield* Effect.forEach(group.value, answer)
                : // The group's transaction failed: none of it happened; logged once, every caller told.
                  Array.from(orders, constant(yield* failed(group.cause)))
              let next = 0
              for (const request of requests) {
                if (request.tag === "Trade") {
                  yield* replier.complete(request, exits[next++]!)
                  continue
                }
                const results = request.payload.orders.map(() => {
                  const exit = exits[next++]!
                  return Exit.isSuccess(exit)
                    ? Either.right(exit.value)
                    : Either.left(Option.getOrElse(Cause.failureOption(exit.cause), () => interrupted))
                })
                yield* replier.succeed(request, results)
              }
            })
          const drain = Effect.gen(function* () {
            let taken = Chunk.toReadonlyArray((yield* mailbox.takeAll)[0])
            yield* afterPendingIo
            if (Option.getOrElse(mailbox.unsafeSize(), () => 0) > 0)
              taken = taken.concat(Chunk.toReadonlyArray((yield* mailbox.takeAll)[0]))
            let group: Array<TradeRequest> = []
            for (const request of taken) {
              if (request.tag !== "Accrue") {
                group.push(request as TradeRequest)
                continue
              }
              if (group.length > 0) yield* trades(group)
              group = []
              yield* accrue(request as Envelope.Request<typeof Accrue>)
            }
            if (group.length > 0) yield* trades(group)
          })
          // A defect answers the requests it hit (as 500s) and never stops the actor: later requests must
          // still be served.
          return Effect.forever(drain.pipe(Effect.catchAllCause((cause) => Effect.logError("market actor", cause))))
        }
      }),
      { maxIdleTime: "5 minutes", mailboxCapacity: config.tradeQueue }
    )
  )
)

/** `effect` every `interval` for ever, its first run at once; a failure is logged and the schedule goes on. */
const every = <E, R>(what: string, effect: Effect.Effect<unknown, E, R>, interval: Duration.DurationInput) =>
  Effect.repeat(
    effect.pipe(Effect.catchAllCause((cause) => Effect.logWarning(`${what} failed`, cause))),
    Schedule.spaced(interval)
  )

/**
 * The marketplace's clocks: every burn interval each burning agent's actor charges what it owes
 * (the amount follows elapsed time, so a late or missed tick loses nothing), the coin's price is sampled into its
 * history, and expired trade claims are deleted hourly. The first tick runs at start, catching up after downtime.
 *
 * A cluster singleton: it runs on the one runner that holds its shard — the only runner in single mode, one of
 * several in runners mode, moving with the shard when that runner dies (docs/cluster.md, "What runs where").
 */
export const MarketScheduleLive = Singleton.make(
  "market-schedule",
  Effect.gen(function* () {
    const config = yield* MarketConfig
    const agents = yield* Agents
    const history = yield* CoinHistory
    const actor = yield* MarketAgent.client
    const trading = yield* Trading
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
    yield* Effect.all(
      [
        every("cost accrual", accrueAll, config.burnInterval),
        every("coin price sample", history.sample, config.priceSampleInterval),
        every("deleting expired trade claims", trading.forgetExpiredClaims, "1 hour")
      ],
      { concurrency: "unbounded", discard: true }
    )
  })
)
