import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import {
  Agents,
  COIN,
  CoinHistory,
  CoinIssuance,
  Ledger,
  MAX_LEG,
  MarketServices,
  SqlTest,
  TREASURY,
  toUnits,
  UNIT,
  unitsText
} from "../support/keel.js"

const MarketTest = MarketServices.pipe(Layer.provideMerge(SqlTest))
const WALLET = "0x52908400098527886E0F7030069857D2E4169EE7"

describe("coin issuance: coin goes only where someone can use it, with a reason", () => {
  it.effect("a wallet (bare or as wallet:…, any case), an existing agent or the treasury", () =>
    Effect.gen(function* () {
      const issuance = yield* CoinIssuance
      yield* (yield* Agents).create({ ticker: "SAGE", name: "Sage", description: "", burnRateHourly: 0n })
      const first = yield* issuance.mintTo(WALLET.toLowerCase(), 2n * UNIT, "grant")
      // One account whatever the address's case; clients see it in EIP-55 form.
      assert.deepStrictEqual(first, {
        entry: first.entry,
        account: `wallet:${WALLET}`,
        amount: 2n * UNIT,
        balance: 2n * UNIT
      })
      const again = yield* issuance.mintTo(`wallet:${WALLET}`, UNIT, "grant")
      assert.strictEqual(again.balance, 3n * UNIT)
      assert.strictEqual((yield* issuance.mintTo("agent:SAGE", UNIT, "funding")).account, "agent:SAGE")
      assert.strictEqual((yield* issuance.mintTo("agent:sage", UNIT, "funding")).balance, 2n * UNIT)
      assert.strictEqual((yield* issuance.mintTo(TREASURY, UNIT, "reserve")).balance, UNIT)
      const ledger = yield* Ledger
      assert.strictEqual(yield* ledger.balance(`wallet:${WALLET.toLowerCase()}`, COIN), 3n * UNIT)
      assert.isTrue((yield* ledger.audit()).ok)
    }).pipe(Effect.provide(MarketTest))
  )

  it.effect(
    "refuses any other account, a missing agent, a blank reason and a non-positive amount; nothing journaled",
    () =>
      Effect.gen(function* () {
        const issuance = yield* CoinIssuance
        for (const to of ["garbage", "wallet:garbage", "wallet:", "system:issuance", "curve:SAGE", "agent:", ""]) {
          const refused = yield* Effect.either(issuance.mintTo(to, UNIT, "x"))
          assert.isTrue(Either.isLeft(refused) && refused.left._tag === "MintRefused", to)
        }
        const missing = yield* Effect.either(issuance.mintTo("agent:NOPE", UNIT, "x"))
        assert.isTrue(Either.isLeft(missing) && missing.left._tag === "AgentNotFound")
        // The one ticker rule (docs/marketplace.md, "Tickers"): a malformed ticker is refused by the rule, not looked up.
        for (const to of ["agent:A", "agent:1ABC", "agent:ABCDEFGHIJK", "agent:SA GE"]) {
          const refused = yield* Effect.either(issuance.mintTo(to, UNIT, "x"))
          assert.isTrue(Either.isLeft(refused) && refused.left._tag === "MintRefused", to)
          if (Either.isLeft(refused) && refused.left._tag === "MintRefused")
            assert.include(refused.left.detail, "must be 2 to 10 letters or digits, starting with a letter", to)
        }
        for (const [amount, reason] of [
          [UNIT, " "],
          [0n, "x"],
          [-UNIT, "x"]
        ] as const) {
          const refused = yield* Effect.either(issuance.mintTo(WALLET, amount, reason))
          assert.isTrue(Either.isLeft(refused) && refused.left._tag === "MintRefused", `${amount} ${reason}`)
        }
        yield* issuance.mintTo(WALLET, MAX_LEG, "all of it")
        const over = yield* Effect.either(issuance.mintTo(TREASURY, 1n, "one more"))
        assert.isTrue(Either.isLeft(over) && over.left.code === "MINT_REFUSED")
        assert.include(Either.isLeft(over) ? over.left.detail : "", unitsText(MAX_LEG))
        const audit = yield* (yield* Ledger).audit()
        assert.deepInclude(audit, { ok: true, entries: 1 })
      }).pipe(Effect.provide(MarketTest))
  )
})

describe("the ledger's bounds on the other operator amounts", () => {
  it.effect("a coin price is more than 0 and at most the ledger's largest amount", () =>
    Effect.gen(function* () {
      const coin = yield* CoinHistory
      for (const price of [0n, -1n, MAX_LEG + 1n]) {
        const refused = yield* Effect.either(coin.setPrice(price))
        assert.isTrue(Either.isLeft(refused) && refused.left.code === "INVALID_INPUT", String(price))
      }
      yield* coin.setPrice(toUnits("2.5"))
      assert.strictEqual(yield* coin.currentPrice, toUnits("2.5"))
    }).pipe(Effect.provide(MarketTest))
  )

  it.effect("an agent's burn rate is at most the ledger's largest amount an hour", () =>
    Effect.gen(function* () {
      const agents = yield* Agents
      const refused = yield* Effect.either(
        agents.create({ ticker: "HOT", name: "Hot", description: "", burnRateHourly: MAX_LEG + 1n })
      )
      assert.isTrue(Either.isLeft(refused) && refused.left.code === "INVALID_INPUT")
      assert.strictEqual((yield* agents.page({ limit: 10 })).items.length, 0)
      yield* agents.create({ ticker: "HOT", name: "Hot", description: "", burnRateHourly: MAX_LEG })
    }).pipe(Effect.provide(MarketTest))
  )

  it("exact decimal text of nano-units, for messages", () => {
    assert.strictEqual(unitsText(MAX_LEG), "4611686018.427387904")
    assert.strictEqual(unitsText(toUnits("2.5")), "2.5")
    assert.strictEqual(unitsText(1n), "0.000000001")
    assert.strictEqual(unitsText(-UNIT), "-1")
    assert.strictEqual(unitsText(0n), "0")
  })
})
