import { HttpClient, HttpClientRequest } from "@effect/platform"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { HttpTest } from "../support/http.js"
import { call, fundedWallet, launchAgent } from "../support/market.js"

// What a client can rely on at the edges of a request (docs/marketplace.md, docs/errors.md): every spelling of
// a path the router answers is gated as that route; an unknown member of a trade is refused, not ignored;
// VALIDATION_FAILED lists every invalid field once, and never a schema.

const TRADING_LIMIT = 24

layer(HttpTest({ env: { MARKET_RATE_LIMIT_TRADING: String(TRADING_LIMIT) } }), {
  timeout: "60 seconds",
  excludeTestServices: true
})("a trade request's edges", (it) => {
  it.effect("another spelling of the trade path is a trade: authenticated and counted as trading", () =>
    Effect.gen(function* () {
      yield* launchAgent("EDGE")
      const wallet = yield* fundedWallet(601, "100")
      for (const path of ["/api/tokens/EDGE/buy/", "/API/Tokens/EDGE/BUY", "/api//tokens/EDGE/buy"]) {
        const answer = yield* call("POST", path, { bearer: wallet.key, body: { user_id: wallet.address, amount: 0.1 } })
        assert.strictEqual(answer.status, 200, `${path}: ${JSON.stringify(answer.body)}`)
        assert.strictEqual(answer.headers["x-ratelimit-limit"], String(TRADING_LIMIT), path)
      }
      const anonymous = yield* call("POST", "/api/tokens/EDGE/buy/", { body: { user_id: wallet.address, amount: 0.1 } })
      assert.strictEqual(anonymous.status, 401)
      const balance = yield* call("GET", `/api/coin/balance/?user_id=${wallet.address}`, { bearer: wallet.key })
      assert.strictEqual(balance.status, 200, JSON.stringify(balance.body))
      // The router answers a HEAD with the GET route: it is authenticated and counted as the GET is.
      const client = yield* HttpClient.HttpClient
      const head = yield* client
        .execute(
          HttpClientRequest.head(`/api/coin/balance?user_id=${wallet.address}`).pipe(
            HttpClientRequest.bearerToken(wallet.key)
          )
        )
        .pipe(Effect.scoped, Effect.orDie)
      assert.strictEqual(head.status, 200)
      assert.strictEqual(head.headers["x-ratelimit-limit"], "500")
    })
  )

  it.effect("an unknown member (the other side's guard, a misspelt one) is refused and nothing is traded", () =>
    Effect.gen(function* () {
      yield* launchAgent("GUARD")
      const wallet = yield* fundedWallet(602, "100")
      const before = yield* call("GET", `/api/coin/balance?user_id=${wallet.address}`, { bearer: wallet.key })
      for (const [side, extra] of [
        ["buy", { min_coin_out: 1_000_000 }],
        ["buy", { minTokensOut: 1e9 }],
        ["sell", { min_tokens_out: 1 }]
      ] as const) {
        const answer = yield* call("POST", `/api/tokens/GUARD/${side}`, {
          bearer: wallet.key,
          body: { user_id: wallet.address, amount: 1, ...extra }
        })
        assert.strictEqual(answer.status, 400, JSON.stringify(answer.body))
        assert.strictEqual(answer.body.code, "VALIDATION_FAILED")
        const [member] = Object.keys(extra)
        assert.deepInclude(
          answer.body.errors.map((e: { path: string }) => e.path),
          member
        )
      }
      const after = yield* call("GET", `/api/coin/balance?user_id=${wallet.address}`, { bearer: wallet.key })
      assert.deepStrictEqual(after.body, before.body)
    })
  )

  it.effect("the OpenAPI document declares the credentials each operation takes, as the gate checks them", () =>
    Effect.gen(function* () {
      const spec = (yield* call("GET", "/docs/marketplace/openapi.json")).body
      assert.strictEqual(spec.components.securitySchemes.apiKey.scheme, "bearer")
      assert.strictEqual(spec.components.securitySchemes.walletSignature.name, "X-Wallet-Signature")
      const security = (path: string, method: string) => spec.paths[path][method].security
      const keyOrSignature = [{ apiKey: [] }, { walletSignature: [] }]
      assert.deepStrictEqual(security("/api/tokens/{ticker}/buy", "post"), keyOrSignature)
      assert.deepStrictEqual(security("/api/tokens/{ticker}/sell", "post"), keyOrSignature)
      assert.deepStrictEqual(security("/api/coin/balance", "get"), keyOrSignature)
      assert.deepStrictEqual(security("/api/chat", "post"), [{ apiKey: [] }])
      for (const [path, method] of [
        ["/api/agents", "get"],
        ["/api/tokens", "get"],
        ["/api/chat", "get"],
        ["/api/coin/history", "get"]
      ] as const)
        assert.deepStrictEqual(security(path, method), [], path)
    })
  )

  it.effect("VALIDATION_FAILED lists every invalid field once, and a body that is not an object plainly", () =>
    Effect.gen(function* () {
      yield* launchAgent("FORM")
      const wallet = yield* fundedWallet(603, "100")
      const both = yield* call("POST", "/api/tokens/FORM/buy", {
        bearer: wallet.key,
        body: { user_id: wallet.address, amount: "x", fill_or_kill: "y" }
      })
      assert.strictEqual(both.status, 400)
      assert.deepStrictEqual(both.body.errors.map((e: { path: string }) => e.path).sort(), ["amount", "fill_or_kill"])
      assert.include(both.body.detail, "(and 1 more)")
      // An optional query parameter: its one real issue, not a second "Expected undefined".
      const limit = yield* call("GET", "/api/agents?limit=0")
      assert.strictEqual(limit.status, 400)
      assert.strictEqual(limit.body.errors.length, 1, JSON.stringify(limit.body.errors))
      assert.notInclude(JSON.stringify(limit.body), "Expected undefined")
      for (const text of ["[]", "null", "5"]) {
        const notObject = yield* call("POST", "/api/tokens/FORM/buy", { bearer: wallet.key, rawBody: text })
        assert.strictEqual(notObject.status, 400, text)
        assert.strictEqual(notObject.body.detail, "(root): must be an object", text)
        assert.notInclude(JSON.stringify(notObject.body), "readonly")
      }
    })
  )
})
