import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import {
  COIN,
  type CurveState,
  curveAccount,
  defaultLaunch,
  exactIntegers,
  Ledger,
  quoteBuy,
  quoteSell,
  ServicesTest,
  TokenMarket,
  UNIT
} from "../support/keel.js"

/**
 * Model-based property tests of the market: random sequences of buys, sells, mints, burns and round
 * trips on four wallets and three tickers, each sequence on a fresh in-memory database. Every operation's
 * outcome is predicted from the quote and the balances before it, and the books are checked after each.
 */

const settings = { feeBps: 100n, agentShareBps: 2_000n }
const WALLETS = ["wallet:1", "wallet:2", "wallet:3", "wallet:4"] as const
const TICKERS = ["AAA", "BBB", "CCC"] as const
const BPS = 10_000n

type Op =
  | {
      readonly kind: "buy"
      readonly wallet: number
      readonly ticker: number
      readonly coinIn: bigint
      readonly guardBps: number
    }
  | {
      readonly kind: "sell"
      readonly wallet: number
      readonly ticker: number
      readonly fractionBps: number
      readonly extra: bigint
      readonly guardBps: number
    }
  | { readonly kind: "mint"; readonly wallet: number; readonly amount: bigint }
  | { readonly kind: "burn"; readonly wallet: number; readonly fractionBps: number; readonly extra: bigint }
  | { readonly kind: "roundTrip"; readonly wallet: number; readonly ticker: number; readonly coinIn: bigint }

const walletArb = fc.integer({ min: 0, max: WALLETS.length - 1 })
const tickerArb = fc.integer({ min: 0, max: TICKERS.length - 1 })
/** Dust (refused as too small), ordinary trades, and whales that exhaust a curve or overdraw the wallet. */
const coinArb = fc.oneof(
  { arbitrary: fc.bigInt({ min: 0n, max: 200n }), weight: 1 },
  { arbitrary: fc.bigInt({ min: 1n, max: 60n * UNIT }).noBias(), weight: 8 },
  { arbitrary: fc.bigInt({ min: 60n * UNIT, max: 3_000n * UNIT }).noBias(), weight: 2 }
)
/** A share of what is held, in basis points: often all of it, sometimes more than all of it. */
const fractionArb = fc.oneof(
  { arbitrary: fc.integer({ min: 1, max: 10_000 }), weight: 5 },
  { arbitrary: fc.constant(10_000), weight: 2 },
  { arbitrary: fc.integer({ min: 10_001, max: 20_000 }), weight: 2 }
)
/** Added on top of the share: one nano-unit past the balance, or enough for a wallet holding nothing to try. */
const extraArb = fc.oneof(
  { arbitrary: fc.constant(0n), weight: 6 },
  { arbitrary: fc.constant(1n), weight: 1 },
  { arbitrary: fc.bigInt({ min: 1n, max: 1_000_000n * UNIT }), weight: 1 }
)
/** The slippage guard as a share of the quote: none, or within 1 % either side (above 100 % fails). */
const guardArb = fc.oneof(
  { arbitrary: fc.constant(0), weight: 3 },
  { arbitrary: fc.integer({ min: 9_900, max: 10_100 }), weight: 1 }
)

const opArb = (weights: { readonly trade: number; readonly money: number; readonly roundTrip: number }) =>
  fc.oneof(
    {
      weight: weights.trade,
      arbitrary: fc.record({
        kind: fc.constant("buy" as const),
        wallet: walletArb,
        ticker: tickerArb,
        coinIn: coinArb,
        guardBps: guardArb
      })
    },
    {
      weight: weights.trade,
      arbitrary: fc.record({
        kind: fc.constant("sell" as const),
        wallet: walletArb,
        ticker: tickerArb,
        fractionBps: fractionArb,
        extra: extraArb,
        guardBps: guardArb
      })
    },
    {
      weight: weights.money,
      arbitrary: fc.record({
        kind: fc.constant("mint" as const),
        wallet: walletArb,
        amount: fc.bigInt({ min: 1n, max: 500n * UNIT }).noBias()
      })
    },
    {
      weight: weights.money,
      arbitrary: fc.record({
        kind: fc.constant("burn" as const),
        wallet: walletArb,
        fractionBps: fractionArb,
        extra: extraArb
      })
    },
    {
      weight: weights.roundTrip,
      arbitrary: fc.record({
        kind: fc.constant("roundTrip" as const),
        wallet: walletArb,
        ticker: tickerArb,
        coinIn: coinArb
      })
    }
  ) satisfies fc.Arbitrary<Op>

/** Opening buys give the wallets positions to sell; they are checked like any other operation. */
const openingArb = fc.array(
  fc.record({
    kind: fc.constant("buy" as const),
    wallet: walletArb,
    ticker: tickerArb,
    coinIn: fc.bigInt({ min: 1n, max: 40n * UNIT }).noBias(),
    guardBps: fc.constant(0)
  }),
  { minLength: 2, maxLength: 5 }
)

const sequenceArb = (weights: Parameters<typeof opArb>[0]) => ({
  funds: fc.array(
    fc.oneof(
      { arbitrary: fc.constant(0n), weight: 1 },
      { arbitrary: fc.bigInt({ min: UNIT, max: 300n * UNIT }).noBias(), weight: 5 }
    ),
    { minLength: WALLETS.length, maxLength: WALLETS.length }
  ),
  opening: openingArb,
  ops: fc.array(opArb(weights), { minLength: 8, maxLength: 20 })
})

const key = (account: string, asset: string) => `${account} ${asset}`

/** Everything an operation could touch, read in three queries. */
interface Books {
  readonly balances: ReadonlyMap<string, bigint>
  readonly curves: ReadonlyMap<string, CurveState>
  /** Balances, curves, journal and trade counts, as text: equal before and after means nothing changed. */
  readonly fingerprint: string
}

const balanceIn = (books: Books, account: string, asset: string) => books.balances.get(key(account, asset)) ?? 0n
const curveIn = (books: Books, ticker: string) => books.curves.get(ticker)!

const showBigints = (_: string, value: unknown) => (typeof value === "bigint" ? `${value}n` : value)
const show = (op: Op) => JSON.stringify(op, showBigints)

const market = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const ledger = yield* Ledger
  const tokens = yield* TokenMarket
  let minted = 0n
  let burned = 0n

  const books = exactIntegers(
    Effect.gen(function* () {
      const balances = yield* sql<{ account: string; asset: string; balance: bigint }>`
        SELECT account, asset, balance FROM ledger_balances ORDER BY account, asset`
      const curves = yield* sql<{ ticker: string; virtual_coin: bigint; virtual_token: bigint; real_token: bigint }>`
        SELECT ticker, virtual_coin, virtual_token, real_token FROM market_curves ORDER BY ticker`
      const counts = yield* sql<{ entries: bigint; legs: bigint; trades: bigint }>`
        SELECT (SELECT count(*) FROM ledger_entries) AS entries, (SELECT count(*) FROM ledger_legs) AS legs,
          (SELECT count(*) FROM market_trades) AS trades`
      return {
        balances: new Map(balances.map((row) => [key(row.account, row.asset), BigInt(row.balance)])),
        curves: new Map(
          curves.map((row) => [
            row.ticker,
            {
              virtualCoin: BigInt(row.virtual_coin),
              virtualToken: BigInt(row.virtual_token),
              realToken: BigInt(row.real_token)
            }
          ])
        ),
        fingerprint: JSON.stringify({ balances, curves, counts }, showBigints)
      } satisfies Books
    })
  ).pipe(Effect.orDie)

  /** The journal's own audit, plus the supply and each curve's reserves against the model. */
  const checkConservation = (after: Books, context: string) =>
    Effect.gen(function* () {
      const report = yield* ledger.audit()
      assert.isTrue(report.ok, `${context}: ${report.problems.join("; ")}`)
      assert.strictEqual(report.coinSupply, minted - burned, `${context}: supply is not minted minus burned`)
      for (const ticker of TICKERS) {
        const curve = curveIn(after, ticker)
        assert.strictEqual(
          balanceIn(after, curveAccount(ticker), COIN),
          curve.virtualCoin - defaultLaunch.virtualCoin,
          `${context}: ${ticker}'s coin reserve is not what its curve has taken in`
        )
        assert.strictEqual(
          balanceIn(after, curveAccount(ticker), ticker),
          curve.realToken,
          `${context}: ${ticker}'s token reserve is not the curve's real reserve`
        )
        assert.isTrue(
          curve.virtualCoin * curve.virtualToken >= defaultLaunch.virtualCoin * defaultLaunch.virtualToken,
          `${context}: ${ticker}'s k fell below its launch value`
        )
      }
    })

  /**
   * The wallets together can never take out more coin than was minted to them less what was burned:
   * their coin plus what all their tokens of each ticker fetch if sold at once (the most that selling
   * them can fetch in any order) is bounded by it. (Valuing each wallet's tokens separately is not
   * bounded: an early buyer's tokens are worth more after a later buyer pushes the price up.)
   */
  const checkNoProfit = (after: Books, context: string) => {
    let wealth = 0n
    for (const wallet of WALLETS) wealth += balanceIn(after, wallet, COIN)
    for (const ticker of TICKERS) {
      let held = 0n
      for (const wallet of WALLETS) held += balanceIn(after, wallet, ticker)
      assert.strictEqual(held, defaultLaunch.realToken - curveIn(after, ticker).realToken)
      wealth += quoteSell(curveIn(after, ticker), held, settings.feeBps)?.coinOut ?? 0n
    }
    assert.isTrue(
      wealth <= minted - burned,
      `${context}: the wallets could cash out ${wealth}, more than the ${minted - burned} put in`
    )
  }

  /**
   * Runs one operation after predicting its outcome from the books before it. A predicted failure must
   * fail with that error and leave the books byte-for-byte as they were; a success must move exactly the
   * quoted amounts. Returns the books after.
   */
  const step = (op: Op, before: Books) =>
    Effect.gen(function* () {
      const wallet = WALLETS[op.wallet]!
      const coinBefore = balanceIn(before, wallet, COIN)
      const context = show(op)
      let expected: string | undefined
      let result: { readonly _tag: "Left"; readonly left: { readonly _tag: string } } | { readonly _tag: "Right" }
      let verify: (after: Books) => void = () => {}

      switch (op.kind) {
        case "buy": {
          const ticker = TICKERS[op.ticker]!
          const quote = quoteBuy(curveIn(before, ticker), op.coinIn, settings.feeBps)
          const minOut = quote === undefined ? 0n : (quote.tokensOut * BigInt(op.guardBps)) / BPS
          expected =
            curveIn(before, ticker).realToken <= 0n
              ? "CurveComplete"
              : quote === undefined
                ? "TradeTooSmall"
                : quote.tokensOut < minOut
                  ? "SlippageExceeded"
                  : quote.cost > coinBefore
                    ? "InsufficientFunds"
                    : undefined
          const trade = yield* Effect.either(tokens.buy(ticker, wallet, op.coinIn, settings, minOut))
          result = trade
          if (trade._tag === "Right" && quote !== undefined) {
            assert.deepInclude(trade.right, { coin: quote.cost, tokens: quote.tokensOut, fee: quote.fee }, context)
            assert.isTrue(quote.cost <= op.coinIn, `${context}: charged more than offered`)
            // Selling straight back what was just bought never returns more than it cost.
            const back = quoteSell(quote.next, quote.tokensOut, settings.feeBps)?.coinOut ?? 0n
            assert.isTrue(back <= quote.cost, `${context}: selling the tokens back would return ${back}`)
            verify = (after) => {
              assert.strictEqual(balanceIn(after, wallet, COIN), coinBefore - quote.cost, context)
              assert.strictEqual(
                balanceIn(after, wallet, ticker),
                balanceIn(before, wallet, ticker) + quote.tokensOut,
                context
              )
              assert.deepStrictEqual(curveIn(after, ticker), quote.next, context)
            }
          }
          break
        }
        case "sell": {
          // The drawn ticker among those the wallet holds, so that most sells have something to sell.
          const holding = TICKERS.filter((t) => balanceIn(before, wallet, t) > 0n)
          const ticker = holding.length === 0 ? TICKERS[op.ticker]! : holding[op.ticker % holding.length]!
          const held = balanceIn(before, wallet, ticker)
          const tokensIn = (held * BigInt(op.fractionBps)) / BPS + op.extra
          const quote = quoteSell(curveIn(before, ticker), tokensIn, settings.feeBps)
          const minOut = quote === undefined ? 0n : (quote.coinOut * BigInt(op.guardBps)) / BPS
          expected =
            quote === undefined
              ? "TradeTooSmall"
              : quote.coinOut < minOut
                ? "SlippageExceeded"
                : tokensIn > held
                  ? "InsufficientFunds"
                  : undefined
          const trade = yield* Effect.either(tokens.sell(ticker, wallet, tokensIn, settings, minOut))
          result = trade
          if (trade._tag === "Right" && quote !== undefined) {
            assert.deepInclude(trade.right, { coin: quote.coinOut, tokens: tokensIn, fee: quote.fee }, context)
            verify = (after) => {
              assert.strictEqual(balanceIn(after, wallet, COIN), coinBefore + quote.coinOut, context)
              assert.strictEqual(balanceIn(after, wallet, ticker), held - tokensIn, context)
              assert.deepStrictEqual(curveIn(after, ticker), quote.next, context)
            }
          }
          break
        }
        case "mint": {
          expected = undefined
          result = yield* Effect.either(ledger.mint(wallet, op.amount, "property"))
          if (result._tag === "Right") minted += op.amount
          verify = (after) => assert.strictEqual(balanceIn(after, wallet, COIN), coinBefore + op.amount, context)
          break
        }
        case "burn": {
          const amount = (coinBefore * BigInt(op.fractionBps)) / BPS + op.extra
          expected = amount > coinBefore ? "InsufficientFunds" : undefined
          result = yield* Effect.either(ledger.burn(wallet, amount, "property"))
          if (result._tag === "Right") burned += amount
          verify = (after) => assert.strictEqual(balanceIn(after, wallet, COIN), coinBefore - amount, context)
          break
        }
        case "roundTrip": {
          // Buy, then at once sell exactly what was bought: the wallet never ends with more coin.
          const ticker = TICKERS[op.ticker]!
          const quote = quoteBuy(curveIn(before, ticker), op.coinIn, settings.feeBps)
          expected =
            curveIn(before, ticker).realToken <= 0n
              ? "CurveComplete"
              : quote === undefined
                ? "TradeTooSmall"
                : quote.cost > coinBefore
                  ? "InsufficientFunds"
                  : undefined
          const bought = yield* Effect.either(tokens.buy(ticker, wallet, op.coinIn, settings))
          result = bought
          if (bought._tag === "Right") {
            const sold = yield* Effect.either(tokens.sell(ticker, wallet, bought.right.tokens, settings))
            const back = sold._tag === "Right" ? sold.right.coin : 0n
            if (sold._tag === "Left") assert.strictEqual(sold.left._tag, "TradeTooSmall", context)
            assert.isTrue(back <= bought.right.coin, `${context}: paid ${bought.right.coin}, got back ${back}`)
            verify = (after) => {
              const coinAfter = balanceIn(after, wallet, COIN)
              assert.strictEqual(coinAfter, coinBefore - bought.right.coin + back, context)
              assert.isTrue(coinAfter <= coinBefore, `${context}: the round trip made ${coinAfter - coinBefore}`)
              if (sold._tag === "Right")
                assert.strictEqual(balanceIn(after, wallet, ticker), balanceIn(before, wallet, ticker), context)
            }
          }
          break
        }
      }

      const after = yield* books
      if (result._tag === "Left") {
        assert.strictEqual(result.left._tag, expected ?? "success", `${context} failed unexpectedly`)
        assert.strictEqual(after.fingerprint, before.fingerprint, `${context} failed but changed the books`)
      } else {
        assert.isUndefined(expected, `${context} succeeded, but ${expected} was expected`)
        verify(after)
      }
      return { after, context }
    })

  /** Launches the three tickers and funds the wallets. */
  const open = (funds: ReadonlyArray<bigint>) =>
    Effect.gen(function* () {
      for (const ticker of TICKERS) yield* tokens.launch(ticker)
      for (const [i, amount] of funds.entries()) {
        if (amount === 0n) continue
        yield* ledger.mint(WALLETS[i]!, amount, "seed")
        minted += amount
      }
      return yield* books
    })

  return { open, step, checkConservation, checkNoProfit }
})

describe("the market under random operation sequences", () => {
  it.effect.prop(
    "the conservation invariant holds after every operation of random trading, and a failed operation changes nothing",
    sequenceArb({ trade: 4, money: 2, roundTrip: 1 }),
    ({ funds, opening, ops }) =>
      Effect.gen(function* () {
        const { open, step, checkConservation } = yield* market
        let books = yield* open(funds)
        yield* checkConservation(books, "after launch")
        for (const op of [...opening, ...ops]) {
          const { after, context } = yield* step(op, books)
          yield* checkConservation(after, context)
          books = after
        }
      }).pipe(Effect.provide(ServicesTest())),
    // A hang bound, not a speed claim: 150 sequences take ~25 s here alone and took over 120 s on a machine at load 15.
    { timeout: 400_000, fastCheck: { numRuns: 150 } }
  )

  it.effect.prop(
    "no round trip makes a profit, and the wallets together never hold more than was put in",
    sequenceArb({ trade: 3, money: 1, roundTrip: 3 }),
    ({ funds, opening, ops }) =>
      Effect.gen(function* () {
        const { open, step, checkNoProfit } = yield* market
        let books = yield* open(funds)
        checkNoProfit(books, "after launch")
        for (const op of [...opening, ...ops]) {
          const { after, context } = yield* step(op, books)
          checkNoProfit(after, context)
          books = after
        }
      }).pipe(Effect.provide(ServicesTest())),
    { timeout: 400_000, fastCheck: { numRuns: 150 } }
  )
})
