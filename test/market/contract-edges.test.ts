import { assert, layer } from "@effect/vitest"
import { Effect, Either } from "effect"
import { HttpTest } from "../support/http.js"
import { Agents, Chat, toUnits } from "../support/keel.js"
import { call, fundedWallet, launchAgent } from "../support/market.js"

// Issue 42: what a client can rely on for chat text, tickers and repeated query parameters
// (docs/marketplace.md "Chat" and "Tickers", docs/errors.md "Query parameters").

const TICKER_MESSAGE = "ticker: must be 2 to 10 letters or digits, starting with a letter (any case)"

layer(HttpTest(), { timeout: "90 seconds", excludeTestServices: true })("contract edges", (it) => {
  it.effect("chat refuses control characters and bidi controls (400, nothing stored), keeps line feeds and tabs", () =>
    Effect.gen(function* () {
      const key = yield* launchAgent("TEXT")
      const refused = [
        "nul\u0000",
        "ansi \u001b[31mred\u001b[0m",
        "bell\u0007",
        "carriage\rreturn",
        "del\u007f",
        "c1 \u0085 next line",
        "c1 \u009b csi",
        "trojan \u202eevil",
        "embedding \u202a",
        "pop \u202c",
        "isolate \u2066x\u2069",
        "first strong isolate \u2068"
      ]
      for (const message of refused) {
        const answer = yield* call("POST", "/api/chat", { bearer: key, body: { message, message_type: "chat" } })
        assert.strictEqual(answer.status, 400, JSON.stringify(message))
        assert.strictEqual(answer.body.code, "VALIDATION_FAILED")
        assert.deepStrictEqual(answer.body.errors, [
          {
            path: "message",
            message:
              "must not contain control characters (line feed and tab excepted) or bidirectional controls (U+202A–U+202E, U+2066–U+2069)"
          }
        ])
      }
      const kept = "two lines\nand a\ttab; right-to-left text stays: \u05e9\u05dc\u05d5\u05dd \u200f"
      const posted = yield* call("POST", "/api/chat", { bearer: key, body: { message: kept, message_type: "chat" } })
      assert.strictEqual(posted.status, 201, JSON.stringify(posted.body))
      assert.strictEqual(posted.body.message, kept)
      const stored = (yield* call("GET", "/api/chat?limit=200")).body as ReadonlyArray<{ message: string }>
      assert.deepStrictEqual(
        stored.filter((m) => m.message.startsWith("two lines") || refused.includes(m.message)).map((m) => m.message),
        [kept]
      )
      // The service holds the rule too, for a caller that is not the HTTP route (an embedder, the library).
      const direct = yield* Effect.either((yield* Chat).post({ kind: "agent", ticker: "TEXT" }, "direct \u202e"))
      assert.isTrue(Either.isLeft(direct))
      if (Either.isLeft(direct)) assert.strictEqual(direct.left._tag, "InvalidInput")
    })
  )

  it.effect("an agent's name and description, which chat lines and the stream carry, obey the same rule", () =>
    Effect.gen(function* () {
      const agents = yield* Agents
      for (const [name, description] of [
        ["Evil \u202e", ""],
        ["Red \u001b[31m", ""],
        ["Two\nlines", ""],
        ["Fine", "nul \u0000"],
        ["Fine", "isolate \u2067"]
      ] as const) {
        const refused = yield* Effect.flip(agents.create({ ticker: "NAMES", name, description, burnRateHourly: 0n }))
        assert.strictEqual(refused._tag, "InvalidInput", JSON.stringify([name, description]))
      }
      const kept = yield* agents.create({
        ticker: "NAMES",
        name: "Sh\u00e2lom \u05e9\u05dc\u05d5\u05dd",
        description: "line one\n\tline two",
        burnRateHourly: 0n
      })
      assert.strictEqual(kept.description, "line one\n\tline two")
    })
  )

  it.effect("a malformed ticker is one 400 with one message whatever its length; a well-formed unknown one 404", () =>
    Effect.gen(function* () {
      const wallet = yield* fundedWallet(701, "10")
      for (const ticker of ["A", "1AB", "A-B", "ABCDEFGHIJK", "A".repeat(17), "A".repeat(200), "A".repeat(300)]) {
        const detail = yield* call("GET", `/api/agents/${ticker}`)
        assert.strictEqual(detail.status, 400, `${ticker.length}: ${JSON.stringify(detail.body)}`)
        assert.strictEqual(detail.body.code, "VALIDATION_FAILED")
        assert.strictEqual(detail.body.detail, TICKER_MESSAGE, `${ticker.length}`)
        for (const side of ["buy", "sell"]) {
          const trade = yield* call("POST", `/api/tokens/${ticker}/${side}`, {
            bearer: wallet.key,
            body: { user_id: wallet.address, amount: 1 }
          })
          assert.strictEqual(trade.status, 400, `${side} ${ticker.length}: ${JSON.stringify(trade.body)}`)
          assert.strictEqual(trade.body.detail, TICKER_MESSAGE)
        }
      }
      for (const ticker of ["AB", "zz9", "ABCDEFGHIJ"]) {
        const unknown = yield* call("GET", `/api/agents/${ticker}`)
        assert.strictEqual(unknown.status, 404, ticker)
        assert.strictEqual(unknown.body.code, "AGENT_NOT_FOUND")
      }
      // The OpenAPI document publishes the rule.
      const spec = (yield* call("GET", "/docs/marketplace/openapi.json")).body
      const parameter = spec.paths["/api/agents/{ticker}"].get.parameters.find(
        (p: { name: string }) => p.name === "ticker"
      )
      assert.strictEqual(parameter.schema.pattern, "^[A-Za-z][A-Za-z0-9]{1,9}$")
      // The router has no length limit of its own: any path parameter reaches its route (an unknown slug is its 404).
      const slug = yield* call("GET", `/api/public/blog/blog/${"a".repeat(300)}`)
      assert.strictEqual(slug.status, 404)
      assert.strictEqual(slug.body.code, "POST_NOT_FOUND")
      // The same rule launches agents: any case (stored upper case), the same words when refused.
      const agents = yield* Agents
      const launched = yield* agents.create({ ticker: "rule", name: "Rule", description: "", burnRateHourly: 0n })
      assert.strictEqual(launched.ticker, "RULE")
      for (const ticker of ["A", "1AB", "ABCDEFGHIJK"]) {
        const refused = yield* Effect.flip(
          agents.create({ ticker, name: "Bad", description: "", burnRateHourly: toUnits("0") })
        )
        assert.strictEqual(refused._tag, "InvalidInput")
        if (refused._tag === "InvalidInput") assert.strictEqual(refused.detail, TICKER_MESSAGE)
      }
    })
  )

  it.effect("a query parameter a route reads, sent twice, is a 400 naming it, on every surface", () =>
    Effect.gen(function* () {
      for (const [path, name] of [
        ["/api/agents?limit=1&limit=2", "limit"],
        ["/api/tokens?offset=0&offset=0", "offset"],
        ["/api/chat?before=5&before=6", "before"],
        ["/api/coin/history?period=1h&period=24h", "period"],
        ["/api/public/blog/blog?page=1&page=2", "page"],
        ["/api/experiments/assign?app_id=a&platform=web&surface=s&subject=x&subject=y", "subject"]
      ] as const) {
        const answer = yield* call("GET", path)
        assert.strictEqual(answer.status, 400, `${path}: ${JSON.stringify(answer.body)}`)
        assert.strictEqual(answer.body.code, "VALIDATION_FAILED", path)
        assert.deepStrictEqual(answer.body.errors, [{ path: name, message: "must be sent once" }], path)
        assert.strictEqual(answer.body.detail, `${name}: must be sent once`, path)
      }
      // A repeated parameter no route reads changes nothing, as any parameter it does not read.
      assert.strictEqual((yield* call("GET", "/api/agents?utm=a&utm=b")).status, 200)
      // Nor does it take the place of what is wrong elsewhere under the same name (the path's ticker here).
      const path = yield* call("GET", "/api/agents/A?ticker=a&ticker=b")
      assert.strictEqual(path.status, 400)
      assert.strictEqual(path.body.detail, TICKER_MESSAGE)
    })
  )
})
