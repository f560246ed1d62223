import type { HttpClient } from "@effect/platform"
import { assert, layer } from "@effect/vitest"
import { Effect, FastCheck as fc, Runtime } from "effect"
import { HttpTest } from "../support/http.js"
import {
  Ledger,
  MarketConfig,
  quoteSell,
  TokenMarket,
  toUnits,
  tradeEvent,
  UNIT,
  walletAccount
} from "../support/keel.js"
import { call, fundedWallet, launchAgent } from "../support/market.js"

// Money at the edges, as a client meets it through HTTP: every amount the schema admits trades exactly
// or is refused with a 4xx problem; decimals never charge or move more than asked.

const balanceOf = (address: string, asset = "COIN") =>
  Effect.flatMap(Ledger, (ledger) => ledger.balance(walletAccount(address), asset))

layer(HttpTest({ env: { MARKET_RATE_LIMIT_TRADING: "100000" } }), {
  timeout: "120 seconds",
  excludeTestServices: true
})("marketplace money at the edges", (it) => {
  it.effect("every admitted amount, up to 1e12, buys and sells exactly or is a 4xx problem — never a 5xx", () =>
    Effect.gen(function* () {
      yield* launchAgent("EDGE")
      const w = yield* fundedWallet(301, "1000000")
      // A holding to sell from.
      yield* call("POST", "/api/tokens/EDGE/buy", { bearer: w.key, body: { user_id: w.address, amount: 5 } })
      const amounts = fc.oneof(
        fc.constantFrom(1e-10, 1e-9, 0.5e-9, 1, 9.2e9, 9.3e9, 4.7e9, 1e10, 1e11, 999999999999.9999, 1e12),
        fc.double({ min: 1e-10, max: 1e12, noNaN: true, noDefaultInfinity: true })
      )
      const runtime = yield* Effect.runtime<HttpClient.HttpClient | Ledger>()
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(fc.constantFrom("buy", "sell"), amounts, async (side, amount) => {
            const outcome = await Runtime.runPromise(runtime)(
              Effect.gen(function* () {
                const coinBefore = yield* balanceOf(w.address)
                const tokensBefore = yield* balanceOf(w.address, "EDGE")
                const answer = yield* call("POST", `/api/tokens/EDGE/${side}`, {
                  bearer: w.key,
                  body: { user_id: w.address, amount }
                })
                const coinAfter = yield* balanceOf(w.address)
                const tokensAfter = yield* balanceOf(w.address, "EDGE")
                return { answer, coinBefore, coinAfter, tokensBefore, tokensAfter }
              })
            )
            const { answer, coinAfter, coinBefore, tokensAfter, tokensBefore } = outcome
            const asked = toUnits(amount)
            if (answer.status === 200) {
              if (side === "buy") {
                assert.isAtMost(Number(coinBefore - coinAfter), Number(asked), `buy ${amount}`)
                assert.strictEqual(coinBefore - coinAfter, toUnits(answer.body.coin_spent))
              } else {
                assert.strictEqual(tokensBefore - tokensAfter, asked, `sell ${amount}`)
              }
            } else {
              assert.isAtLeast(answer.status, 400, JSON.stringify(answer.body))
              assert.isBelow(answer.status, 500, JSON.stringify(answer.body))
              assert.strictEqual(coinAfter, coinBefore)
              assert.strictEqual(tokensAfter, tokensBefore)
              assert.isString(answer.body.code)
            }
          }),
          { numRuns: 120 }
        )
      )
      assert.isTrue((yield* (yield* Ledger).audit()).ok)
    })
  )

  it.effect("decimals past the ninth place round toward the caller: never charged or moved more than asked", () =>
    Effect.gen(function* () {
      yield* launchAgent("DECS")
      const w = yield* fundedWallet(302, "1000")
      const spend = (raw: string) =>
        call("POST", "/api/tokens/DECS/buy", {
          bearer: w.key,
          rawBody: `{"user_id":"${w.address}","amount":${raw}}`
        })
      let before = yield* balanceOf(w.address)
      const a = yield* spend("0.9999999999")
      assert.strictEqual(a.status, 200)
      assert.strictEqual(before - (yield* balanceOf(w.address)), 999_999_999n)
      assert.strictEqual(a.body.coin_spent, 0.999999999)
      before = yield* balanceOf(w.address)
      // 17 significant digits: a double would round this up past what was asked; the text does not.
      const b = yield* spend("1.23456789999999999")
      assert.strictEqual(b.status, 200)
      assert.strictEqual(before - (yield* balanceOf(w.address)), 1_234_567_899n)
      before = yield* balanceOf(w.address)
      const c = yield* spend("2.0000000015e0")
      assert.strictEqual(c.status, 200)
      assert.strictEqual(before - (yield* balanceOf(w.address)), 2_000_000_001n)
      // 1e-10 is below one nano-unit: nothing to spend, a 422, nothing moved.
      before = yield* balanceOf(w.address)
      const tiny = yield* spend("1e-10")
      assert.strictEqual(tiny.status, 422)
      assert.strictEqual(tiny.body.code, "TRADE_TOO_SMALL")
      assert.strictEqual(yield* balanceOf(w.address), before)

      const tokens = yield* balanceOf(w.address, "DECS")
      assert.isAbove(Number(tokens), Number(2n * UNIT))
      const sell = yield* call("POST", "/api/tokens/DECS/sell", {
        bearer: w.key,
        rawBody: `{"user_id":"${w.address}","amount":1.0000000005}`
      })
      assert.strictEqual(sell.status, 200)
      assert.strictEqual(tokens - (yield* balanceOf(w.address, "DECS")), UNIT)
      assert.strictEqual(sell.body.tokens_sold, 1)
      // A guard rounds up: asking for exactly the payout plus a tenth of a nano-unit is asking one nano-unit more.
      const { settings } = yield* MarketConfig
      const quote = quoteSell(yield* (yield* TokenMarket).curve("DECS"), UNIT, settings.feeBps)!
      const payout = `${quote.coinOut / UNIT}.${(quote.coinOut % UNIT).toString().padStart(9, "0")}`
      const guarded = yield* call("POST", "/api/tokens/DECS/sell", {
        bearer: w.key,
        rawBody: `{"user_id":"${w.address}","amount":1,"min_coin_out":${payout}1}`
      })
      assert.strictEqual(guarded.status, 409)
      assert.strictEqual(guarded.body.code, "SLIPPAGE_EXCEEDED")
      const exact = yield* call("POST", "/api/tokens/DECS/sell", {
        bearer: w.key,
        rawBody: `{"user_id":"${w.address}","amount":1,"min_coin_out":${payout}}`
      })
      assert.strictEqual(exact.status, 200)
      assert.strictEqual(toUnits(exact.body.coin_received), quote.coinOut)
    })
  )

  it.effect(
    "a buy past what is left fills the rest and says so; fill_or_kill refuses it; a sold-out curve is CURVE_COMPLETE",
    () =>
      Effect.gen(function* () {
        yield* launchAgent("FULL")
        const w = yield* fundedWallet(303, "1000")
        const before = yield* balanceOf(w.address)
        const killed = yield* call("POST", "/api/tokens/FULL/buy", {
          bearer: w.key,
          body: { user_id: w.address, amount: 500, fill_or_kill: true }
        })
        assert.strictEqual(killed.status, 422)
        assert.strictEqual(killed.body.code, "ORDER_NOT_FILLED")
        assert.strictEqual(yield* balanceOf(w.address), before)
        const rest = yield* call("POST", "/api/tokens/FULL/buy", {
          bearer: w.key,
          body: { user_id: w.address, amount: 500 }
        })
        assert.strictEqual(rest.status, 200)
        assert.strictEqual(rest.body.partial, true)
        assert.isBelow(rest.body.coin_spent, 500)
        assert.strictEqual(before - (yield* balanceOf(w.address)), toUnits(rest.body.coin_spent))
        assert.strictEqual((yield* (yield* TokenMarket).curve("FULL")).realToken, 0n)
        const soldOut = yield* call("POST", "/api/tokens/FULL/buy", {
          bearer: w.key,
          body: { user_id: w.address, amount: 1 }
        })
        assert.strictEqual(soldOut.status, 409)
        assert.strictEqual(soldOut.body.code, "CURVE_COMPLETE")
      })
  )

  it.effect("the stream's trade event: coin is the wallet's side on both sides, curve_coin the curve's", () =>
    Effect.gen(function* () {
      yield* launchAgent("EVNT")
      const market = yield* TokenMarket
      const { settings } = yield* MarketConfig
      yield* (yield* Ledger).mint("wallet:evnt", 100n * UNIT, "funding")
      const buy = yield* market.buy("EVNT", "wallet:evnt", 10n * UNIT, settings)
      const bought = tradeEvent("0x0000000000000000000000000000000000000001", buy)
      assert.strictEqual(bought.coin, 10) // paid, fee included
      assert.strictEqual(bought.curve_coin, 9.9) // entered the curve
      assert.strictEqual(bought.fee, 0.1)
      const sell = yield* market.sell("EVNT", "wallet:evnt", buy.tokens, settings)
      const sold = tradeEvent("0x0000000000000000000000000000000000000001", sell)
      assert.strictEqual(toUnits(sold.coin) + toUnits(sold.fee), toUnits(sold.curve_coin)) // received = left the curve − fee
      assert.strictEqual(sold.partial, false)
    })
  )
})
