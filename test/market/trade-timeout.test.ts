import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Either, Layer } from "effect"
import { ClusterTest, ServicesTest } from "../../src/layers/Test.js"
import { GENERATED_ORDER_ID, Trades } from "../../src/services/market/Trades.js"
import { Agents, Ledger, toUnits, walletAccount } from "../support/keel.js"
import { SilentMarketAgent } from "../support/market.js"

// docs/cluster.md, "Failover": a caller waits for its ticker's actor at most MARKET_TRADE_TIMEOUT, then is answered
// 503 TRADE_OUTCOME_UNKNOWN with the order's id — never a hang. Here the actor never answers (what a caller sees
// while the actor's runner is dead and its shard not yet taken over), so the bound is all there is.
const W1 = "0x00000000000000000000000000000000000000d1"

const graph = (mode: "single" | "runners") =>
  Trades.Default.pipe(
    Layer.provideMerge(SilentMarketAgent),
    Layer.provideMerge(ClusterTest),
    Layer.provideMerge(ServicesTest()),
    Layer.provide(
      Layer.setConfigProvider(
        ConfigProvider.fromMap(
          new Map([
            ["KEEL_CLUSTER_MODE", mode],
            ["MARKET_TRADE_TIMEOUT", "300 millis"]
          ])
        )
      )
    )
  )

const buy = (idempotencyKey: string | undefined) =>
  Effect.gen(function* () {
    yield* (yield* Agents)
      .create({ ticker: "SLOW", name: "Slow", description: "never answers", burnRateHourly: 0n })
      .pipe(Effect.ignore)
    yield* (yield* Ledger).mint(walletAccount(W1), toUnits("10"), "test funding").pipe(Effect.orDie)
    return yield* Effect.either(
      (yield* Trades).place(
        { kind: "wallet", address: W1 },
        { side: "buy", ticker: "SLOW", userId: W1, amount: "1", minimum: undefined, idempotencyKey }
      )
    )
  })

// it.live: the bound is real time.
describe("a trade whose actor does not answer", () => {
  it.live("is answered TRADE_OUTCOME_UNKNOWN with its Idempotency-Key and Retry-After, after the bound", () =>
    Effect.gen(function* () {
      const answer = yield* buy("order-17")
      assert.isTrue(Either.isLeft(answer))
      const error = (
        answer as Either.Left<
          { _tag: string; code: string; idempotency_key: unknown; retry_after_seconds: number; detail: string },
          unknown
        >
      ).left
      assert.strictEqual(error._tag, "TradeOutcomeUnknown")
      assert.strictEqual(error.code, "TRADE_OUTCOME_UNKNOWN")
      assert.strictEqual(error.idempotency_key, "order-17")
      assert.strictEqual(error.retry_after_seconds, 1)
      assert.include(error.detail, "300ms")
    }).pipe(Effect.provide(graph("single")))
  )

  it.live("in runners mode an order sent without a key is told the id Keel gave it", () =>
    Effect.gen(function* () {
      const answer = yield* buy(undefined)
      assert.isTrue(Either.isLeft(answer))
      const error = (answer as Either.Left<{ _tag: string; idempotency_key: unknown }, unknown>).left
      assert.strictEqual(error._tag, "TradeOutcomeUnknown")
      assert.isTrue(String(error.idempotency_key).startsWith(GENERATED_ORDER_ID))
    }).pipe(Effect.provide(graph("runners")))
  )

  it.live("in single mode an order without a key has no id to retry with: the answer says so", () =>
    Effect.gen(function* () {
      const answer = yield* buy(undefined)
      const error = (answer as Either.Left<{ idempotency_key: unknown; detail: string }, unknown>).left
      assert.isNull(error.idempotency_key)
      assert.include(error.detail, "Check the balance")
    }).pipe(Effect.provide(graph("single")))
  )
})
