import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { COIN } from "../../src/services/market/Ledger.js"
import { GENERATED_ORDER_ID } from "../../src/services/market/Trades.js"
import { Agents, AppTest, Ledger, type TradeOrder, Trades, Trading, toUnits, walletAccount } from "../support/keel.js"

// Issue 45, exactly-once trades over at-least-once delivery (docs/cluster.md, "Exactly-once effects", "Trades"): in
// runners mode every order carries an id claimed first in its trade's transaction, so a TradeBatch message the
// cluster delivers again (after a runner's death) trades once and answers the stored receipt.
const W1 = "0x00000000000000000000000000000000000000c1"

const inMode = (mode: "single" | "runners") =>
  AppTest().pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["KEEL_CLUSTER_MODE", mode]])))))

const setup = Effect.gen(function* () {
  yield* (yield* Agents).create({ ticker: "ONCE", name: "Once", description: "exactly once", burnRateHourly: 0n })
  yield* (yield* Ledger).mint(walletAccount(W1), toUnits("100"), "test funding")
}).pipe(Effect.orDie)

const buyThroughTheFrontDoor = Effect.flatMap(Trades, (trades) =>
  trades.place(
    { kind: "wallet", address: W1 },
    { side: "buy", ticker: "ONCE", userId: W1, amount: "1", minimum: undefined, idempotencyKey: undefined }
  )
)

const claims = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => sql<{ key: string; created_at: unknown }>`SELECT key, created_at FROM market_idempotency ORDER BY key`
).pipe(Effect.orDie)

const tradeCount = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ n: unknown }>`SELECT count(*) AS n FROM market_trades`.pipe(Effect.map((rows) => Number(rows[0]!.n)))
).pipe(Effect.orDie)

// it.live: the cluster's runner takes its shards on the real clock.
describe("exactly-once trades over at-least-once delivery", () => {
  it.live(
    "in runners mode an order sent without a key is claimed under an id of its own, answered as a first answer",
    () =>
      Effect.gen(function* () {
        yield* setup
        for (let i = 0; i < 3; i++) assert.isFalse((yield* buyThroughTheFrontDoor).replayed)
        const rows = yield* claims
        assert.strictEqual(rows.length, 3)
        assert.isTrue(rows.every((row) => row.key.startsWith(GENERATED_ORDER_ID)))
        assert.strictEqual(new Set(rows.map((row) => row.key)).size, 3)
      }).pipe(Effect.provide(inMode("runners")))
  )

  it.live("in single mode (one process, nothing delivered twice) an order without a key is not claimed", () =>
    Effect.gen(function* () {
      yield* setup
      yield* buyThroughTheFrontDoor
      assert.deepStrictEqual(yield* claims, [])
      assert.strictEqual(yield* tradeCount, 1)
    }).pipe(Effect.provide(inMode("single")))
  )

  it.live("a TradeBatch delivered twice trades once: the second delivery answers the stored receipts", () =>
    Effect.gen(function* () {
      yield* setup
      const trading = yield* Trading
      const order = (id: string, coin: string): TradeOrder => ({
        side: "buy",
        ticker: "ONCE",
        wallet: W1,
        amount: toUnits(coin),
        minimum: 0n,
        idempotency: { principal: `wallet:${W1}`, key: `${GENERATED_ORDER_ID}${id}`, fingerprint: `f-${id}` }
      })
      const batch = [order("a", "1"), order("b", "2")]
      const first = yield* trading.tradeBatch(batch)
      const balance = yield* (yield* Ledger).balance(walletAccount(W1), COIN)
      const again = yield* trading.tradeBatch(batch)
      assert.deepStrictEqual(
        again.map((exit) => exit._tag === "Success" && exit.value.replayed),
        [true, true]
      )
      assert.deepStrictEqual(
        again.map((exit) => (exit._tag === "Success" ? exit.value.receipt : undefined)),
        first.map((exit) => (exit._tag === "Success" ? exit.value.receipt : undefined))
      )
      assert.strictEqual(yield* tradeCount, 2)
      assert.strictEqual(yield* (yield* Ledger).balance(walletAccount(W1), COIN), balance)
    }).pipe(Effect.provide(inMode("runners")))
  )

  it.live("claims older than 24 hours are deleted by the market's schedule step; younger ones are kept", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const now = Date.now()
      for (const [key, age] of [
        ["old", 25 * 3_600_000],
        ["young", 3_600_000]
      ] as const)
        yield* sql`INSERT INTO market_idempotency (principal, key, fingerprint, response, created_at)
          VALUES ('wallet:x', ${key}, 'f', '{}', ${now - age})`
      yield* (yield* Trading).forgetExpiredClaims
      assert.deepStrictEqual(
        (yield* claims).map((row) => row.key),
        ["young"]
      )
    }).pipe(Effect.provide(inMode("runners")))
  )
})
