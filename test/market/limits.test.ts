import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { HttpTest } from "../support/http.js"
import { call, fundedWallet, launchAgent, serverPort } from "../support/market.js"

// A server of its own: the limiter's counters start empty. Live clock, so the window is real time.
layer(HttpTest(), { timeout: "60 seconds", excludeTestServices: true })("rate limits per minute", (it) => {
  it.effect("the 61st trade in a minute is 429 RATE_LIMITED with Retry-After; every answer carries the headers", () =>
    Effect.gen(function* () {
      yield* launchAgent("LIMIT")
      const w = yield* fundedWallet(40)
      const order = { bearer: w.key, body: { user_id: w.address, amount: 0.01 } }
      const answers = []
      for (let i = 0; i < 61; i++) answers.push(yield* call("POST", "/api/tokens/LIMIT/buy", order))
      assert.deepStrictEqual(
        answers.slice(0, 60).map((a) => a.status),
        Array.from({ length: 60 }, () => 200)
      )
      assert.deepStrictEqual(
        answers.slice(0, 60).map((a) => Number(a.headers["x-ratelimit-remaining"])),
        Array.from({ length: 60 }, (_, i) => 59 - i)
      )
      for (const answer of answers) assert.strictEqual(answer.headers["x-ratelimit-limit"], "60")
      const limited = answers[60]!
      assert.strictEqual(limited.status, 429)
      assert.strictEqual(limited.body.code, "RATE_LIMITED")
      assert.strictEqual(limited.body.status, 429)
      const retryAfter = Number(limited.headers["retry-after"])
      assert.isAtLeast(retryAfter, 1)
      assert.isAtMost(retryAfter, 60)
      assert.strictEqual(limited.headers["x-ratelimit-remaining"], "0")
      assert.approximately(Number(limited.headers["x-ratelimit-reset"]), Date.now() / 1000 + retryAfter, 2)

      // The trading limit is per principal: another wallet still trades, and reads are another class.
      const other = yield* fundedWallet(41)
      const otherTrade = yield* call("POST", "/api/tokens/LIMIT/buy", {
        bearer: other.key,
        body: { user_id: other.address, amount: 0.01 }
      })
      assert.strictEqual(otherTrade.status, 200)
      const balance = yield* call("GET", `/api/coin/balance?user_id=${w.address}`, { bearer: w.key })
      assert.strictEqual(balance.status, 200)
      assert.strictEqual(balance.headers["x-ratelimit-limit"], "500")
    })
  )

  it.effect("an endpoint's class goes with its route: HEAD of the balance is authenticated, buy/ is trading", () =>
    Effect.gen(function* () {
      const port = yield* serverPort
      // The router answers a HEAD with the GET route: it needs what the GET needs.
      const head = yield* Effect.promise(() =>
        fetch(`http://127.0.0.1:${port}/api/coin/balance?user_id=0x${"a".repeat(40)}`, { method: "HEAD" })
      )
      assert.strictEqual(head.status, 401)
      assert.strictEqual(head.headers.get("x-ratelimit-limit"), "500")
      // The router reads `/buy/` as the buy route: a trade, with the trading class's limit and credentials.
      const slash = yield* call("POST", "/api/tokens/LIMIT/buy/", {
        body: { user_id: `0x${"a".repeat(40)}`, amount: 1 }
      })
      assert.strictEqual(slash.status, 401)
      assert.strictEqual(slash.headers["x-ratelimit-limit"], "60")
      const chat = yield* call("POST", "/api/chat", { body: { message: "hi", message_type: "chat" } })
      assert.strictEqual(chat.status, 401)
      assert.strictEqual(chat.headers["x-ratelimit-limit"], "500")
    })
  )

  it.effect("public endpoints allow 100 requests a minute per client IP", () =>
    Effect.gen(function* () {
      const statuses: Array<number> = []
      let last = yield* call("GET", "/api/tokens")
      statuses.push(last.status)
      while (last.status === 200 && statuses.length < 150) {
        last = yield* call("GET", "/api/tokens")
        statuses.push(last.status)
      }
      assert.strictEqual(last.status, 429)
      // The first test's public reads (none) and this loop share the loopback IP's counter.
      assert.strictEqual(statuses.filter((s) => s === 200).length, 100)
      assert.strictEqual(last.headers["x-ratelimit-limit"], "100")
      assert.isDefined(last.headers["retry-after"])
    })
  )
})
