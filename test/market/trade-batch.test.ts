import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Either, Exit, Layer } from "effect"
import {
  Agents,
  AppTest,
  Ledger,
  MarketAgent,
  type TradeOrder,
  TradeSender,
  toUnits,
  walletAccount
} from "../support/keel.js"

const W1 = "0x00000000000000000000000000000000000000b1"
const W2 = "0x00000000000000000000000000000000000000b2"
const W3 = "0x00000000000000000000000000000000000000b3"

const buy = (wallet: string, coin: string): TradeOrder => ({
  side: "buy",
  ticker: "BAT",
  wallet,
  amount: toUnits(coin),
  minimum: 0n
})
const sell = (wallet: string, tokens: string): TradeOrder => ({
  side: "sell",
  ticker: "BAT",
  wallet,
  amount: toUnits(tokens),
  minimum: 0n
})

const setup = Effect.gen(function* () {
  yield* (yield* Agents).create({ ticker: "BAT", name: "Batch", description: "batched trades", burnRateHourly: 0n })
  const ledger = yield* Ledger
  for (const wallet of [W1, W2, W3]) yield* ledger.mint(walletAccount(wallet), toUnits("100"), "test funding")
  return ledger
}).pipe(Effect.orDie)

const trades = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ n: number }>`SELECT count(*) AS n FROM market_trades`.pipe(Effect.map((rows) => Number(rows[0]!.n)))
).pipe(Effect.orDie)

const outcome = (exit: Exit.Exit<unknown, { readonly _tag: string }>) =>
  Exit.isSuccess(exit) ? "ok" : exit.cause._tag === "Fail" ? exit.cause.error._tag : exit.cause._tag

/** The market with a smaller trade queue: what MARKET_TRADE_QUEUE sets. */
/** The app with a sender of its own beside it: the batching client `Trades` keeps private, tested alone. */
const withSender = <E>(app: Layer.Layer<Layer.Layer.Success<ReturnType<typeof AppTest>>, E>) =>
  TradeSender.Default.pipe(Layer.provideMerge(app))

const withTradeQueue = (size: number) =>
  AppTest().pipe(
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["MARKET_TRADE_QUEUE", String(size)]]))))
  )

// it.live: the cluster's runner takes its shards on the real clock.
describe("trades of one ticker cross the actor hop together", () => {
  it.live("one TradeBatch message answers each order in order with its own result; a refusal changes nothing", () =>
    Effect.gen(function* () {
      const ledger = yield* setup
      const results = yield* (yield* MarketAgent.client)("BAT").TradeBatch({
        orders: [buy(W1, "1"), sell(W2, "5"), buy(W3, "2"), { ...buy(W2, "1"), minimum: 10n ** 30n }, buy(W2, "3")]
      })
      assert.deepStrictEqual(
        results.map((result) => (Either.isRight(result) ? "ok" : result.left._tag)),
        ["ok", "InsufficientFunds", "ok", "SlippageExceeded", "ok"]
      )
      assert.strictEqual(yield* trades, 3)
      assert.strictEqual(yield* ledger.balance(walletAccount(W2), "COIN"), toUnits("97"))
      assert.deepStrictEqual((yield* ledger.audit()).problems, [])
    }).pipe(Effect.provide(AppTest()))
  )

  it.live("orders sent at the same time are each answered with their own outcome", () =>
    Effect.gen(function* () {
      const ledger = yield* setup
      const send = (yield* TradeSender).place
      const exits = yield* Effect.all(
        [send("BAT", buy(W1, "1")), send("BAT", sell(W2, "5")), send("BAT", buy(W3, "2"))].map(Effect.exit),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(exits.map(outcome), ["ok", "InsufficientFunds", "ok"])
      // Arrival order within the batch: the second buy pays at least the price the first one left.
      const price = (exit: (typeof exits)[number] | undefined) =>
        exit !== undefined && Exit.isSuccess(exit) ? exit.value.receipt.price_per_token : Number.NaN
      assert.isAbove(price(exits[2]), price(exits[0]))
      assert.strictEqual(yield* trades, 2)
      assert.deepStrictEqual((yield* ledger.audit()).problems, [])
    }).pipe(Effect.provide(withSender(AppTest())))
  )

  it.live("past MARKET_TRADE_QUEUE orders of a ticker on their way, an order is Overloaded at once, not applied", () =>
    Effect.gen(function* () {
      const ledger = yield* setup
      const send = (yield* TradeSender).place
      const exits = yield* Effect.all(
        [W1, W2, W3, W1, W2].map((wallet) => Effect.exit(send("BAT", buy(wallet, "1")))),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(exits.map(outcome), ["ok", "ok", "Overloaded", "Overloaded", "Overloaded"])
      assert.strictEqual(yield* trades, 2)
      // Once those are answered, the queue takes orders again.
      assert.strictEqual(outcome(yield* Effect.exit(send("BAT", buy(W3, "1")))), "ok")
      assert.strictEqual(yield* trades, 3)
      assert.deepStrictEqual((yield* ledger.audit()).problems, [])
    }).pipe(Effect.provide(withSender(withTradeQueue(2))))
  )
})
