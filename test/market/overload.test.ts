import { SqlClient } from "@effect/sql"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { HttpTest, type RawResponse, rawBurst } from "../support/http.js"
import { Ledger } from "../support/keel.js"
import { call, fundedWallet, launchAgent, serverPort } from "../support/market.js"

const tradeCount = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ n: number }>`SELECT count(*) AS n FROM market_trades WHERE ticker = 'FULL'`
  return row!.n
}).pipe(Effect.orDie)

// A queue of one per ticker: while one trade is being applied, every other trade of that ticker is refused.
layer(HttpTest({ env: { MARKET_TRADE_QUEUE: "1", MARKET_RATE_LIMIT_TRADING: "1000" } }), {
  timeout: "120 seconds",
  excludeTestServices: true
})("a full trade queue", (it) => {
  it.effect("answers 503 OVERLOADED with Retry-After, applies nothing it refused, and never a 500", () =>
    Effect.gen(function* () {
      yield* launchAgent("FULL")
      const wallets = yield* Effect.forEach([300, 301, 302, 303, 304], (n) => fundedWallet(n, "500"))
      const port = yield* serverPort
      const request = (w: (typeof wallets)[number]) => {
        const body = JSON.stringify({ user_id: w.address, amount: 0.01 })
        return [
          "POST /api/tokens/FULL/buy HTTP/1.1",
          "host: 127.0.0.1",
          `authorization: Bearer ${w.key}`,
          "content-type: application/json",
          `content-length: ${Buffer.byteLength(body)}`,
          "connection: close",
          "",
          body
        ].join("\r\n")
      }
      const answers: Array<RawResponse> = []
      // Bounded: up to 5 bursts of 40 trades at once, until the queue has refused some.
      for (let round = 0; round < 5 && !answers.some((a) => a.status === 503); round++) {
        answers.push(
          ...(yield* rawBurst(
            port,
            Array.from({ length: 40 }, (_, i) => request(wallets[i % 5]!))
          ))
        )
      }
      const refused = answers.filter((a) => a.status === 503)
      const ok = answers.filter((a) => a.status === 200)
      assert.deepStrictEqual([...new Set(answers.map((a) => a.status))].sort(), [200, 503])
      for (const answer of refused) {
        const body = JSON.parse(answer.body)
        assert.strictEqual(body.code, "OVERLOADED")
        assert.strictEqual(body.status, 503)
        assert.strictEqual(body.retry_after_seconds, 1)
        assert.strictEqual(answer.headers["retry-after"], "1")
      }
      // Exactly the accepted trades happened.
      assert.strictEqual(yield* tradeCount, ok.length)
      assert.deepStrictEqual((yield* (yield* Ledger).audit()).problems, [])

      // Once the burst is over, the same ticker trades again.
      const w = wallets[0]!
      const after = yield* call("POST", "/api/tokens/FULL/buy", {
        bearer: w.key,
        body: { user_id: w.address, amount: 0.01 }
      })
      assert.strictEqual(after.status, 200)
    })
  )
})
