import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import {
  COIN,
  type CurveState,
  fromUnits,
  jsonNumberTexts,
  Ledger,
  quoteBuy,
  quoteSell,
  ServicesTest,
  toUnits,
  UNIT
} from "../support/keel.js"

const FEE = 100n // 1 %

const launch: CurveState = {
  virtualCoin: 30n * UNIT,
  virtualToken: 1_073_000_000n * UNIT,
  realToken: 793_100_000n * UNIT
}

describe("units", () => {
  it("decimal amounts become exact nano-units from their decimal text, rounding toward the caller", () => {
    assert.strictEqual(toUnits("1.5"), 1_500_000_000n)
    assert.strictEqual(toUnits(0.1), 100_000_000n)
    assert.strictEqual(toUnits("0.0000000019"), 1n)
    assert.strictEqual(fromUnits(1_500_000_000n), 1.5)
    // Amounts to spend or move round down: never more than asked.
    assert.strictEqual(toUnits(0.9999999999), 999_999_999n)
    assert.strictEqual(toUnits("0.9999999999"), 999_999_999n)
    assert.strictEqual(toUnits(1.0000000005), 1_000_000_000n)
    assert.strictEqual(toUnits("0.0000000015"), 1n)
    assert.strictEqual(toUnits(1e-10), 0n)
    assert.strictEqual(toUnits("1e3"), 1_000_000_000_000n)
    assert.strictEqual(toUnits("1.5E-9"), 1n)
    assert.strictEqual(toUnits(1e12), 1_000_000_000_000_000_000_000n)
    // 17 significant digits: the text is exact where a double is not.
    assert.strictEqual(toUnits("123456789012.123456789"), 123_456_789_012_123_456_789n)
    assert.strictEqual(toUnits("0.12345678912345678"), 123_456_789n)
    // Guards (a minimum to receive) round up: never accept less than asked.
    assert.strictEqual(toUnits("1.0000000005", "up"), 1_000_000_001n)
    assert.strictEqual(toUnits("1e-10", "up"), 1n)
    assert.strictEqual(toUnits("2", "up"), 2_000_000_000n)
    assert.throws(() => toUnits("0x10"))
    assert.throws(() => toUnits("1.2.3"))
  })

  it("the source text of a JSON body's numbers, as sent", () => {
    const texts = jsonNumberTexts(
      '{"user_id":"0xab","nested":{"amount":1},"list":[1,2,{"x":"}"}],"amount":0.99999999999999999,"min_tokens_out":1E-10,"s":"a\\"b"}'
    )
    assert.deepStrictEqual(Object.fromEntries(texts), { amount: "0.99999999999999999", min_tokens_out: "1E-10" })
    assert.strictEqual(jsonNumberTexts("[1]").size, 0)
  })
})

const curveArb = fc.record({
  virtualCoin: fc.bigInt({ min: 1n * UNIT, max: 10_000n * UNIT }),
  virtualToken: fc.bigInt({ min: 1_000n * UNIT, max: 2_000_000_000n * UNIT }),
  realToken: fc.bigInt({ min: 0n, max: 1_000_000_000n * UNIT })
})

describe("bonding curve (constant product over virtual reserves)", () => {
  it("k never decreases, reserves never go negative, and a buy then sell never profits", () => {
    fc.assert(
      fc.property(curveArb, fc.bigInt({ min: 1n, max: 1_000n * UNIT }), (curve, coinIn) => {
        const k = curve.virtualCoin * curve.virtualToken
        const buy = quoteBuy(curve, coinIn, FEE)
        if (buy === undefined) return true
        if (buy.cost > coinIn || buy.tokensOut <= 0n || buy.next.realToken < 0n) return false
        if (buy.next.virtualCoin * buy.next.virtualToken < k) return false
        const sell = quoteSell(buy.next, buy.tokensOut, FEE)
        if (sell === undefined) return true
        if (sell.next.virtualCoin * sell.next.virtualToken < buy.next.virtualCoin * buy.next.virtualToken) return false
        return sell.coinOut <= buy.cost
      }),
      { numRuns: 2000 }
    )
  })

  it("a trade whose output rounds to nothing is refused, not executed", () => {
    assert.isUndefined(quoteBuy(launch, 1n, FEE))
    assert.isUndefined(quoteSell(launch, 1n, FEE))
    assert.isUndefined(quoteBuy(launch, 0n, FEE))
  })

  it("a buy larger than the real reserve takes only what is left and costs only that", () => {
    const small: CurveState = { virtualCoin: 30n * UNIT, virtualToken: 1_000n * UNIT, realToken: 10n * UNIT }
    const buy = quoteBuy(small, 1_000n * UNIT, FEE)
    assert.isDefined(buy)
    assert.strictEqual(buy?.tokensOut, 10n * UNIT)
    assert.strictEqual(buy?.next.realToken, 0n)
    assert.isBelow(Number(buy?.cost), Number(1_000n * UNIT))
  })
})

describe("the double-entry ledger", () => {
  it.effect("an unbalanced entry or an overdraft is refused and changes nothing", () =>
    Effect.gen(function* () {
      const ledger = yield* Ledger
      yield* ledger.mint("wallet:a", 100n, "seed")
      const unbalanced = yield* Effect.flip(
        ledger.post("transfer", "t", [
          { account: "wallet:a", asset: COIN, amount: -10n },
          { account: "wallet:b", asset: COIN, amount: 9n }
        ])
      )
      assert.strictEqual(unbalanced._tag, "UnbalancedEntry")
      const overdraft = yield* Effect.flip(
        ledger.post("transfer", "t", [
          { account: "wallet:a", asset: COIN, amount: -101n },
          { account: "wallet:b", asset: COIN, amount: 101n }
        ])
      )
      assert.strictEqual(overdraft._tag, "InsufficientFunds")
      assert.strictEqual(yield* ledger.balance("wallet:a", COIN), 100n)
      assert.strictEqual(yield* ledger.balance("wallet:b", COIN), 0n)
      const report = yield* ledger.audit()
      assert.isTrue(report.ok, report.problems.join("; "))
      assert.strictEqual(report.entries, 1)
    }).pipe(Effect.provide(ServicesTest()))
  )

  it.effect("balances above 2^53 nano-units stay exact", () =>
    Effect.gen(function* () {
      const ledger = yield* Ledger
      const big = 2n ** 60n + 7n
      yield* ledger.mint("wallet:whale", big, "seed")
      assert.strictEqual(yield* ledger.balance("wallet:whale", COIN), big)
      assert.strictEqual((yield* ledger.audit()).coinSupply, big)
    }).pipe(Effect.provide(ServicesTest()))
  )

  it.effect(
    "thousands of random mints, burns and transfers keep every invariant after each step",
    () =>
      Effect.gen(function* () {
        const ledger = yield* Ledger
        const wallets = ["wallet:a", "wallet:b", "wallet:c", "wallet:d", "agent:AAA", "system:treasury"]
        let seed = 12345
        const next = (n: number) => {
          seed = (seed * 1103515245 + 12345) % 2 ** 31
          return seed % n
        }
        let minted = 0n
        let burned = 0n
        for (let step = 0; step < 1500; step++) {
          const from = wallets[next(wallets.length)]!
          const to = wallets[next(wallets.length)]!
          const amount = BigInt(1 + next(1_000_000))
          const op = next(3)
          const result = yield* Effect.either(
            op === 0
              ? ledger.mint(to, amount, "random")
              : op === 1
                ? ledger.burn(from, amount, "random")
                : ledger.post("transfer", "random", [
                    { account: from, asset: COIN, amount: -amount },
                    { account: to, asset: COIN, amount }
                  ])
          )
          if (result._tag === "Right" && op === 0) minted += amount
          if (result._tag === "Right" && op === 1) burned += amount
          if (result._tag === "Left") assert.strictEqual(result.left._tag, "InsufficientFunds")
          if (step % 10 === 0 || step === 1499) {
            const report = yield* ledger.audit()
            assert.isTrue(report.ok, report.problems.join("; "))
            assert.strictEqual(report.coinSupply, minted - burned)
          }
        }
      }).pipe(Effect.provide(ServicesTest())),
    60_000
  )
})

describe("ctl market", () => {
  it.effect("coin mint journals the amount; audit passes, with --json", () =>
    Effect.gen(function* () {
      const { runCli } = yield* Effect.promise(() => import("../support/cli.js"))
      const os = yield* Effect.promise(() => import("node:os"))
      const path = yield* Effect.promise(() => import("node:path"))
      const fs = yield* Effect.promise(() => import("node:fs"))
      const env = { KEEL_DATA_DIR: path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-market-")), "data") }
      const mint = (amount: string, reason: string, ...extra: Array<string>) =>
        runCli(
          [
            "market",
            "coin",
            "mint",
            "--to",
            "wallet:0x52908400098527886E0F7030069857D2E4169EE7",
            "--amount",
            amount,
            "--reason",
            reason,
            ...extra
          ],
          env
        )
      const minted = yield* mint("12.5", "demo", "--json")
      assert.strictEqual(minted.exitCode, 0)
      assert.strictEqual(JSON.parse(minted.stdout).balance, 12.5)
      const bad = yield* mint("-1", "x")
      assert.strictEqual(bad.exitCode, 2)
      const audit = yield* runCli(["market", "audit", "--json"], env)
      assert.strictEqual(audit.exitCode, 0)
      assert.deepStrictEqual(JSON.parse(audit.stdout), {
        ok: true,
        entries: 1,
        coin_supply: 12.5,
        coin_supply_str: "12.5",
        problems: []
      })
    })
  )
})
