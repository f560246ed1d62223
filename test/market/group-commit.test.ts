import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import {
  Agents,
  COIN,
  Ledger,
  ServicesTest,
  type TradeOrder,
  Trading,
  toUnits,
  walletAccount
} from "../support/keel.js"

const W1 = "0x00000000000000000000000000000000000000a1"
const W2 = "0x00000000000000000000000000000000000000a2"
const W3 = "0x00000000000000000000000000000000000000a3"

const buy = (wallet: string, coin: string, idempotencyKey?: string): TradeOrder => ({
  side: "buy",
  ticker: "GRP",
  wallet,
  amount: toUnits(coin),
  minimum: 0n,
  ...(idempotencyKey === undefined
    ? {}
    : { idempotency: { principal: `wallet:${wallet}`, key: idempotencyKey, fingerprint: `buy ${coin}` } })
})

const sell = (wallet: string, tokens: string): TradeOrder => ({
  side: "sell",
  ticker: "GRP",
  wallet,
  amount: toUnits(tokens),
  minimum: 0n
})

const counts = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ trades: number; events: number; entries: number; keys: number }>`
    SELECT (SELECT count(*) FROM market_trades) AS trades, (SELECT count(*) FROM market_events) AS events,
           (SELECT count(*) FROM ledger_entries) AS entries, (SELECT count(*) FROM market_idempotency) AS keys`
  return row!
}).pipe(Effect.orDie)

const setup = Effect.gen(function* () {
  yield* (yield* Agents).create({ ticker: "GRP", name: "Group", description: "group commit", burnRateHourly: 0n })
  const ledger = yield* Ledger
  for (const wallet of [W1, W2, W3]) yield* ledger.mint(walletAccount(wallet), toUnits("100"), "test funding")
  return { trading: yield* Trading, ledger }
}).pipe(Effect.orDie)

/** A fresh database: in memory (statements through the client's connection) or a file (the hot connection). */
const inMemory = () => ServicesTest()
const onFile = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-group-"))
  return ServicesTest({ dataDir: dir, databaseFile: path.join(dir, "keel.db") })
}

describe.each([
  ["in memory", inMemory],
  ["on a database file", onFile]
])("group commit: a ticker's queued trades in one transaction (%s)", (_where, services) => {
  it.effect("a refused trade inside a batch changes nothing and does not fail its neighbours", () =>
    Effect.gen(function* () {
      const { trading, ledger } = yield* setup
      const before = yield* counts
      const exits = yield* trading.tradeBatch([
        buy(W1, "1"),
        // W2 holds no GRP at all: refused with InsufficientFunds, in the middle of the group.
        sell(W2, "5"),
        buy(W3, "2"),
        // A slippage guard no fill can meet.
        { ...buy(W2, "1"), minimum: 10n ** 30n },
        buy(W2, "3")
      ])
      assert.deepStrictEqual(
        exits.map((exit) => (Exit.isSuccess(exit) ? "ok" : exit.cause._tag === "Fail" ? exit.cause.error._tag : "die")),
        ["ok", "InsufficientFunds", "ok", "SlippageExceeded", "ok"]
      )
      const after = yield* counts
      // Three trades: three journal rows, three events, three ledger entries — nothing from the refusals.
      assert.strictEqual(after.trades - before.trades, 3)
      assert.strictEqual(after.events - before.events, 3)
      assert.strictEqual(after.entries - before.entries, 3)
      assert.strictEqual(yield* ledger.balance(walletAccount(W2), COIN), toUnits("97"))
      assert.isTrue((yield* ledger.balance(walletAccount(W2), "GRP")) > 0n)
      assert.deepStrictEqual((yield* ledger.audit()).problems, [])
    }).pipe(Effect.provide(services()))
  )

  it.effect("a group keeps arrival order: each buy pays the price its predecessors left", () =>
    Effect.gen(function* () {
      const { trading } = yield* setup
      const exits = yield* trading.tradeBatch([buy(W1, "5"), buy(W2, "5"), buy(W3, "5")])
      const prices = exits.map((exit) => (Exit.isSuccess(exit) ? exit.value.receipt.price_per_token : Number.NaN))
      assert.isTrue(prices[0]! < prices[1]! && prices[1]! < prices[2]!, `prices rise in order: ${prices.join(", ")}`)
      // The same orders one at a time, on a fresh market, give the same receipts.
      const sequential = yield* Effect.gen(function* () {
        const { trading } = yield* setup
        return yield* Effect.forEach([buy(W1, "5"), buy(W2, "5"), buy(W3, "5")], (order) => trading.trade(order))
      }).pipe(Effect.provide(services()))
      assert.deepStrictEqual(
        exits.map((exit) => (Exit.isSuccess(exit) ? exit.value.receipt : undefined)),
        sequential.map((outcome) => outcome.receipt)
      )
    }).pipe(Effect.provide(services()))
  )

  it.effect("an idempotent retry inside the same group replays the first receipt and trades once", () =>
    Effect.gen(function* () {
      const { trading, ledger } = yield* setup
      const before = yield* counts
      const exits = yield* trading.tradeBatch([buy(W1, "2", "k-1"), buy(W1, "2", "k-1")])
      assert.isTrue(exits.every(Exit.isSuccess))
      const [first, second] = exits.map((exit) => (Exit.isSuccess(exit) ? exit.value : undefined))
      assert.strictEqual(first!.replayed, false)
      assert.strictEqual(second!.replayed, true)
      assert.deepStrictEqual(second!.receipt, first!.receipt)
      const after = yield* counts
      assert.strictEqual(after.trades - before.trades, 1)
      assert.strictEqual(after.keys - before.keys, 1)
      assert.strictEqual(yield* ledger.balance(walletAccount(W1), COIN), toUnits("98"))
    }).pipe(Effect.provide(services()))
  )
})
