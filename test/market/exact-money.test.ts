import { SqlClient } from "@effect/sql"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { HttpTest } from "../support/http.js"
import { call, fundedWallet, launchAgent } from "../support/market.js"

// Issue 42, item 16 (docs/marketplace.md, "Money is exact"): amounts are answered exactly as decimal strings
// beside the numbers, taken exactly as decimal strings, and an amount's text is bounded before any digit of it
// is converted (item 13: a million digits cost 0.6 s of CPU).

const MAX_AMOUNT_TEXT = 64
const TOO_LONG = `must be written in at most ${MAX_AMOUNT_TEXT} characters`

layer(HttpTest(), { timeout: "120 seconds", excludeTestServices: true })("exact money over HTTP", (it) => {
  it.effect("an amount written with a million digits is refused 400, naming the bound; nothing is traded", () =>
    Effect.gen(function* () {
      yield* launchAgent("DIGITS")
      const w = yield* fundedWallet(4210, "100")
      const million = `1.${"0".repeat(1_000_000)}1`
      for (const [label, body] of [
        ["amount, a JSON number", `{"user_id":"${w.address}","amount":${million}}`],
        ["amount, a decimal string", `{"user_id":"${w.address}","amount":"${million}"}`],
        ["the guard", `{"user_id":"${w.address}","amount":1,"min_tokens_out":${million}}`]
      ] as const) {
        const answer = yield* call("POST", "/api/tokens/DIGITS/buy", { bearer: w.key, rawBody: body })
        assert.strictEqual(answer.status, 400, label)
        assert.strictEqual(answer.body.code, "VALIDATION_FAILED", label)
        const path = label === "the guard" ? "min_tokens_out" : "amount"
        assert.deepStrictEqual(answer.body.errors, [{ path, message: TOO_LONG }], label)
        assert.strictEqual(answer.body.detail, `${path}: ${TOO_LONG}`, label)
      }
      // Sixty-four characters are within the bound (and trade what they say).
      const longest = `1.${"0".repeat(MAX_AMOUNT_TEXT - 2)}`
      const ok = yield* call("POST", "/api/tokens/DIGITS/buy", {
        bearer: w.key,
        rawBody: `{"user_id":"${w.address}","amount":${longest}}`
      })
      assert.strictEqual(ok.status, 200, JSON.stringify(ok.body))
      assert.strictEqual(ok.body.coin_spent_str, "1")
      const balance = yield* call("GET", `/api/coin/balance?user_id=${w.address}`, { bearer: w.key })
      assert.strictEqual(balance.body.balance_str, "99")
    })
  )

  it.effect("a zero guard written with a huge exponent is a zero guard (no power of ten is built)", () =>
    Effect.gen(function* () {
      yield* launchAgent("EXPO")
      const w = yield* fundedWallet(4211, "100")
      const answer = yield* call("POST", "/api/tokens/EXPO/buy", {
        bearer: w.key,
        rawBody: `{"user_id":"${w.address}","amount":1,"min_tokens_out":0e-999999999}`
      })
      assert.strictEqual(answer.status, 200, JSON.stringify(answer.body))
      const tiny = yield* call("POST", "/api/tokens/EXPO/buy", {
        bearer: w.key,
        rawBody: `{"user_id":"${w.address}","amount":1,"min_tokens_out":1e-99999999}`
      })
      // Rounded up to one nano-token: a guard any buy of 1 coin meets.
      assert.strictEqual(tiny.status, 200, JSON.stringify(tiny.body))
    })
  )

  it.effect("amounts may be sent as decimal strings: the same trade and the same request as the number", () =>
    Effect.gen(function* () {
      yield* launchAgent("STRS")
      const w = yield* fundedWallet(4212, "100")
      const asNumber = yield* call("POST", "/api/tokens/STRS/buy", {
        bearer: w.key,
        headers: { "idempotency-key": "exact-1" },
        rawBody: `{"user_id":"${w.address}","amount":2.5}`
      })
      assert.strictEqual(asNumber.status, 200, JSON.stringify(asNumber.body))
      const asString = yield* call("POST", "/api/tokens/STRS/buy", {
        bearer: w.key,
        headers: { "idempotency-key": "exact-1" },
        rawBody: `{"user_id":"${w.address}","amount":"2.50"}`
      })
      assert.strictEqual(asString.status, 200)
      assert.strictEqual(asString.headers["idempotent-replayed"], "true")
      assert.deepStrictEqual(asString.body, asNumber.body)
      const sell = yield* call("POST", "/api/tokens/STRS/sell", {
        bearer: w.key,
        rawBody: `{"user_id":"${w.address}","amount":"${asNumber.body.tokens_received_str}","min_coin_out":"0.1"}`
      })
      assert.strictEqual(sell.status, 200, JSON.stringify(sell.body))
      assert.strictEqual(sell.body.tokens_sold_str, asNumber.body.tokens_received_str)
      // A duplicated member is the last one, as JSON.parse reads it: never the text of an earlier number.
      const duplicate = yield* call("POST", "/api/tokens/STRS/buy", {
        bearer: w.key,
        rawBody: `{"user_id":"${w.address}","amount":7,"amount":"0.5"}`
      })
      assert.strictEqual(duplicate.body.coin_spent_str, "0.5")
      for (const bad of ['"0x10"', '" 1"', '"1,5"', '"-1"', '"0"', '""', '"1e13"', '"Infinity"']) {
        const refused = yield* call("POST", "/api/tokens/STRS/buy", {
          bearer: w.key,
          rawBody: `{"user_id":"${w.address}","amount":${bad}}`
        })
        assert.strictEqual(refused.status, 400, bad)
        assert.strictEqual(refused.body.code, "VALIDATION_FAILED", bad)
        assert.strictEqual(refused.body.errors[0].path, "amount", bad)
      }
    })
  )

  it.effect("a receipt stored before the exact fields is replayed with them", () =>
    Effect.gen(function* () {
      yield* launchAgent("OLDR")
      const w = yield* fundedWallet(4213, "100")
      const first = yield* call("POST", "/api/tokens/OLDR/buy", {
        bearer: w.key,
        headers: { "idempotency-key": "old-1" },
        body: { user_id: w.address, amount: 3 }
      })
      assert.strictEqual(first.status, 200)
      // Rewrite the stored receipt as an older version wrote it: the numbers only.
      const sql = yield* SqlClient.SqlClient
      const numbersOnly = Object.fromEntries(Object.entries(first.body).filter(([field]) => !field.endsWith("_str")))
      yield* sql`UPDATE market_idempotency SET response = ${JSON.stringify(numbersOnly)} WHERE key = 'old-1'`.pipe(
        Effect.orDie
      )
      const replay = yield* call("POST", "/api/tokens/OLDR/buy", {
        bearer: w.key,
        headers: { "idempotency-key": "old-1" },
        body: { user_id: w.address, amount: 3 }
      })
      assert.strictEqual(replay.status, 200, JSON.stringify(replay.body))
      // Every amount's text is the same; the price's is the 12 digits the number kept.
      const { price_per_token_str: price, ...amounts } = replay.body
      const { price_per_token_str: firstPrice, ...firstAmounts } = first.body
      assert.deepStrictEqual(amounts, firstAmounts)
      assert.strictEqual(Number(price), first.body.price_per_token)
      assert.match(price, /^0\.0000\d+$/)
      assert.notStrictEqual(firstPrice, undefined)
    })
  )
})

/**
 * A JSON number's decimal text reaches the order through the contract (`ExactNumbers` reads the body, the
 * `AmountInput` schema carries the text), on the route and on the fast path alike: 0.1000000009999999999 is
 * 0.100000001 as a double, and exactly 0.1 coin (rounded down to 9 decimals) as written.
 */
const exactText = (ticker: string, n: number) =>
  Effect.gen(function* () {
    yield* launchAgent(ticker)
    const w = yield* fundedWallet(n, "100")
    const buy = yield* call("POST", `/api/tokens/${ticker}/buy`, {
      bearer: w.key,
      headers: { "idempotency-key": "text-1" },
      rawBody: `{"user_id":"${w.address}","amount":0.1000000009999999999,"min_tokens_out":1e-9}`
    })
    assert.strictEqual(buy.status, 200, JSON.stringify(buy.body))
    assert.strictEqual(buy.body.coin_spent_str, "0.1")
    // The same key with the double's own text is another request (the fingerprint reads the text as written).
    const other = yield* call("POST", `/api/tokens/${ticker}/buy`, {
      bearer: w.key,
      headers: { "idempotency-key": "text-1" },
      rawBody: `{"user_id":"${w.address}","amount":0.100000001,"min_tokens_out":1e-9}`
    })
    assert.strictEqual(other.status, 422, JSON.stringify(other.body))
    assert.strictEqual(other.body.code, "IDEMPOTENCY_KEY_REUSED")
  })

layer(HttpTest({ env: { KEEL_FAST_PATHS: "false" } }), { timeout: "120 seconds", excludeTestServices: true })(
  "exact money through the HttpApi route",
  (it) => {
    it.effect("a JSON number's decimal text is the amount, not its double", () => exactText("ROUTE", 4230))
  }
)

layer(HttpTest(), { timeout: "120 seconds", excludeTestServices: true })("exact money through the fast path", (it) => {
  it.effect("a JSON number's decimal text is the amount, not its double", () => exactText("FASTX", 4231))
})
