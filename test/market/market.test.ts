import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { agentAccount, COIN, curveAccount, Ledger, ServicesTest, TokenMarket, TREASURY, UNIT } from "../support/keel.js"

const settings = { feeBps: 100n, agentShareBps: 2_000n }

const setup = Effect.gen(function* () {
  const market = yield* TokenMarket
  const ledger = yield* Ledger
  for (const ticker of ["AAA", "BBB", "CCC"]) yield* market.launch(ticker)
  for (const wallet of ["wallet:1", "wallet:2", "wallet:3", "wallet:4"])
    yield* ledger.mint(wallet, 1_000n * UNIT, "seed")
  return { market, ledger }
})

describe("token markets on the ledger", () => {
  it.effect("a buy moves coin to the curve, splits the fee between agent and treasury, and hands over tokens", () =>
    Effect.gen(function* () {
      const { ledger, market } = yield* setup
      const trade = yield* market.buy("AAA", "wallet:1", 10n * UNIT, settings)
      assert.strictEqual(trade.coin, 10n * UNIT)
      assert.strictEqual(trade.fee, UNIT / 10n) // 1 % of 10 coin
      assert.strictEqual(yield* ledger.balance("wallet:1", COIN), 990n * UNIT)
      assert.strictEqual(yield* ledger.balance("wallet:1", "AAA"), trade.tokens)
      assert.strictEqual(yield* ledger.balance(agentAccount("AAA"), COIN), UNIT / 50n) // 20 % of the fee
      assert.strictEqual(yield* ledger.balance(TREASURY, COIN), UNIT / 10n - UNIT / 50n)
      assert.strictEqual(yield* ledger.balance(curveAccount("AAA"), COIN), 10n * UNIT - UNIT / 10n)
      assert.isTrue((yield* ledger.audit()).ok)
    }).pipe(Effect.provide(ServicesTest()))
  )

  it.effect("a ticker launches once: a second launch is AGENT_EXISTS and changes nothing", () =>
    Effect.gen(function* () {
      const { ledger, market } = yield* setup
      const before = yield* market.curve("AAA")
      const entries = (yield* ledger.audit()).entries
      const again = yield* Effect.flip(market.launch("AAA"))
      assert.strictEqual(again._tag, "AgentExists")
      assert.strictEqual(again.code, "AGENT_EXISTS")
      assert.deepStrictEqual(yield* market.curve("AAA"), before)
      assert.deepInclude(yield* ledger.audit(), { ok: true, entries })
    }).pipe(Effect.provide(ServicesTest()))
  )

  it.effect("slippage guards, overdrafts and unknown tokens fail and change nothing", () =>
    Effect.gen(function* () {
      const { ledger, market } = yield* setup
      const before = yield* market.curve("AAA")
      const slip = yield* Effect.flip(market.buy("AAA", "wallet:1", 10n * UNIT, settings, 10n ** 30n))
      assert.strictEqual(slip._tag, "SlippageExceeded")
      yield* ledger.mint("wallet:poor", 10n * UNIT, "seed")
      const broke = yield* Effect.flip(market.buy("AAA", "wallet:poor", 50n * UNIT, settings))
      assert.strictEqual(broke._tag, "InsufficientFunds")
      const noTokens = yield* Effect.flip(market.sell("AAA", "wallet:2", 5n * UNIT, settings))
      assert.strictEqual(noTokens._tag, "InsufficientFunds")
      if (noTokens._tag === "InsufficientFunds") assert.strictEqual(noTokens.code, "INSUFFICIENT_TOKENS")
      const unknown = yield* Effect.flip(market.buy("ZZZ", "wallet:1", UNIT, settings))
      assert.strictEqual(unknown._tag, "AgentNotFound")
      assert.deepStrictEqual(yield* market.curve("AAA"), before)
      assert.strictEqual(yield* ledger.balance("wallet:1", COIN), 1_000n * UNIT)
      assert.strictEqual(yield* ledger.balance("wallet:poor", COIN), 10n * UNIT)
      assert.strictEqual((yield* ledger.audit()).entries, 8) // 3 launches + 5 mints: no trade was journaled
    }).pipe(Effect.provide(ServicesTest()))
  )

  it.effect("a buy larger than what is left on the curve takes the rest and charges only for it", () =>
    Effect.gen(function* () {
      const { ledger, market } = yield* setup
      const trade = yield* market.buy("AAA", "wallet:1", 900n * UNIT, settings)
      assert.strictEqual((yield* market.curve("AAA")).realToken, 0n)
      assert.isTrue(trade.partial)
      assert.isBelow(Number(trade.coin), Number(100n * UNIT)) // pump.fun's curve completes near 85 coin
      assert.strictEqual(yield* ledger.balance("wallet:1", COIN), 1_000n * UNIT - trade.coin)
      // A complete curve says so: sold out, not "too small".
      const sold = yield* Effect.flip(market.buy("AAA", "wallet:2", UNIT, settings))
      assert.strictEqual(sold._tag, "CurveComplete")
      assert.isTrue((yield* ledger.audit()).ok)
    }).pipe(Effect.provide(ServicesTest()))
  )

  it.effect(
    "random buys, sells and mints on three tickers keep the invariant, and no round trip makes a profit",
    () =>
      Effect.gen(function* () {
        const { ledger, market } = yield* setup
        const wallets = ["wallet:1", "wallet:2", "wallet:3", "wallet:4"]
        const tickers = ["AAA", "BBB", "CCC"]
        let seed = 99
        const next = (n: number) => {
          seed = (seed * 1103515245 + 12345) % 2 ** 31
          return seed % n
        }
        for (let step = 0; step < 600; step++) {
          const wallet = wallets[next(wallets.length)]!
          const ticker = tickers[next(tickers.length)]!
          const op = next(10)
          if (op < 5) {
            yield* Effect.either(
              market.buy(ticker, wallet, (BigInt(1 + next(50)) * UNIT) / BigInt(1 + next(10)), settings)
            )
          } else if (op < 9) {
            const held = yield* ledger.balance(wallet, ticker)
            if (held > 0n) yield* Effect.either(market.sell(ticker, wallet, held / BigInt(1 + next(4)), settings))
          } else {
            // A round trip: buy, then sell exactly what was bought. The wallet never ends richer.
            const coinBefore = yield* ledger.balance(wallet, COIN)
            const bought = yield* Effect.either(market.buy(ticker, wallet, BigInt(1 + next(20)) * UNIT, settings))
            if (bought._tag === "Right") {
              yield* Effect.either(market.sell(ticker, wallet, bought.right.tokens, settings))
              assert.isAtMost(Number(yield* ledger.balance(wallet, COIN)), Number(coinBefore))
            }
          }
          if (step % 25 === 0) {
            const report = yield* ledger.audit()
            assert.isTrue(report.ok, report.problems.join("; "))
          }
        }
        const report = yield* ledger.audit()
        assert.isTrue(report.ok, report.problems.join("; "))
        assert.strictEqual(report.coinSupply, 4_000n * UNIT)
      }).pipe(Effect.provide(ServicesTest())),
    120_000
  )
})
