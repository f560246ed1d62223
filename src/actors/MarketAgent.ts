import { Entity, type Envelope } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { Cause, Chunk, Effect, Exit, Layer, Option, Schedule, Schema } from "effect"
import { identity } from "effect/Function"
import { Agents } from "../services/market/Agents.js"
import { CoinHistory } from "../services/market/CoinPrice.js"
import {
  ActorFailed,
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
 * The Trade message: a `TradeOrder`, as a transformation from itself. A struct schema has a `make`, and the
 * RPC client calls it on every message, which validates the whole order again (≈ 2 % of a trade's CPU in the
 * market bench profile); the order was built from the request's decoded fields, and what a remote runner
 * receives is still decoded by the schema.
 */
const TradeMessage = Schema.transform(TradeOrder, Schema.typeSchema(TradeOrder), {
  strict: true,
  decode: identity,
  encode: identity
})

const Trade = Rpc.make("Trade", {
  payload: TradeMessage,
  success: TradeOutcome,
  error: Schema.Union(
    AgentNotFound,
    AgentNotTrading,
    SlippageExceeded,
    TradeTooSmall,
    CurveComplete,
    OrderNotFilled,
    InsufficientFunds,
    IdempotencyKeyReused,
    ActorFailed
  )
})
const Accrue = Rpc.make("Accrue", { success: Schema.BigInt, error: Schema.Union(AgentNotFound, ActorFailed) })

/**
 * One actor per agent, keyed by ticker: its trades and its cost accrual are handled one at a time,
 * while different tickers run side by side. All state is in SQL (Trading, Agents), so passivation
 * or a restart loses nothing; messages are volatile because an HTTP caller waits for the answer.
 */
export const MarketAgent = Entity.make("MarketAgent", [Trade, Accrue])

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
 * The actor drains its mailbox: every trade queued for its ticker when it looks is applied in one
 * transaction (group commit, a savepoint per trade), in arrival order, and each caller is answered with its
 * own receipt or refusal once that transaction has committed. Before it takes a group it lets the event loop
 * read what its sockets hold (`afterPendingIo`), so trades sent at the same time share one commit. An accrual runs alone, in its place in the
 * order. The mailbox holds at most `MARKET_TRADE_QUEUE` requests (queued and in progress); past that a
 * sender is told `MailboxFull` at once, which the HTTP layer answers with 503 and `Retry-After`.
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
        /** Typed refusals and interruptions as they are; a defect through `failed`. */
        const answer = <A, E>(exit: Exit.Exit<A, E>): Effect.Effect<Exit.Exit<A, E | ActorFailed>> =>
          Exit.isSuccess(exit) || !Cause.isDie(exit.cause) ? Effect.succeed(exit) : failed(exit.cause)
        return (mailbox, replier) => {
          const accrue = (request: Envelope.Request<typeof Accrue>) =>
            Effect.flatMap(Effect.exit(agents.accrue(ticker)), (exit) =>
              Effect.flatMap(answer(exit), (answered) => replier.complete(request, answered))
            )
          const trades = (requests: ReadonlyArray<Envelope.Request<typeof Trade>>) =>
            Effect.gen(function* () {
              // The actor's own ticker is authoritative: an order can only ever trade the token it was sent to.
              const exits = yield* Effect.exit(trading.tradeBatch(requests.map((r) => ({ ...r.payload, ticker }))))
              if (Exit.isFailure(exits)) {
                // The group's transaction failed: none of it happened; logged once, every caller told.
                const answered = yield* failed(exits.cause)
                for (const request of requests) yield* replier.complete(request, answered)
                return
              }
              for (const [i, request] of requests.entries())
                yield* replier.complete(request, yield* answer(exits.value[i]!))
            })
          const drain = Effect.gen(function* () {
            let taken = Chunk.toReadonlyArray((yield* mailbox.takeAll)[0])
            yield* afterPendingIo
            if (Option.getOrElse(mailbox.unsafeSize(), () => 0) > 0)
              taken = taken.concat(Chunk.toReadonlyArray((yield* mailbox.takeAll)[0]))
            let group: Array<Envelope.Request<typeof Trade>> = []
            for (const request of taken) {
              if (request.tag === "Trade") {
                group.push(request as Envelope.Request<typeof Trade>)
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
