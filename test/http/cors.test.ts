import * as http from "node:http"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { HttpTest } from "../support/http.js"
import { serverPort } from "../support/market.js"

/** One request with an Origin, answered as a browser would see its headers. */
const request = (port: number, method: string, path: string, headers: Record<string, string>) =>
  Effect.promise(
    () =>
      new Promise<{ status: number; headers: http.IncomingHttpHeaders }>((resolve, reject) => {
        const req = http.request({ host: "127.0.0.1", port, method, path, headers, agent: false }, (res) => {
          res.resume()
          res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers }))
        })
        req.on("error", reject)
        req.end()
      })
  )

layer(HttpTest(), { timeout: "30 seconds", excludeTestServices: true })("CORS, any origin (the default)", (it) => {
  it.effect(
    "public marketplace reads and the assignment answer browsers and expose the rate-limit and paging headers",
    () =>
      Effect.gen(function* () {
        const port = yield* serverPort
        const agents = yield* request(port, "GET", "/api/agents?limit=1", { origin: "https://app.example" })
        assert.strictEqual(agents.headers["access-control-allow-origin"], "*")
        for (const name of [
          "x-ratelimit-limit",
          "x-ratelimit-remaining",
          "x-ratelimit-reset",
          "link",
          "retry-after",
          "etag"
        ])
          assert.include(agents.headers["access-control-expose-headers"], name)
        const preflight = yield* request(port, "OPTIONS", "/api/experiments/assign", {
          origin: "https://app.example",
          "access-control-request-method": "GET",
          "access-control-request-headers": "x-client-key"
        })
        assert.strictEqual(preflight.status, 204)
        assert.strictEqual(preflight.headers["access-control-allow-origin"], "*")
        assert.include(preflight.headers["access-control-allow-headers"], "x-client-key")
        assert.include(preflight.headers["access-control-allow-methods"], "GET")
        // A web app's onboarding: the bundle and the events, from the browser too.
        for (const [path, method] of [
          ["/api/onboarding/bundle", "GET"],
          ["/api/onboarding/events", "POST"]
        ] as const) {
          const onboarding = yield* request(port, "OPTIONS", path, {
            origin: "https://app.example",
            "access-control-request-method": method,
            "access-control-request-headers": "x-client-key, content-type"
          })
          assert.strictEqual(onboarding.status, 204, path)
          assert.strictEqual(onboarding.headers["access-control-allow-origin"], "*", path)
          assert.include(onboarding.headers["access-control-allow-methods"], method, path)
          assert.include(onboarding.headers["access-control-allow-headers"], "if-none-match", path)
        }
        // An error answer on such a route carries the headers too (the browser must be able to read it).
        const missing = yield* request(port, "GET", "/api/agents/NOPE", { origin: "https://app.example" })
        assert.strictEqual(missing.status, 404)
        assert.strictEqual(missing.headers["access-control-allow-origin"], "*")
        // The readout, from a dashboard on another origin: preflights with the admin token's header are answered,
        // and its answers (a refusal too) are readable.
        for (const path of [
          "/api/experiments/onboarding-copy/results?metric=signup",
          "/api/analytics/summary?site=web"
        ]) {
          const readout = yield* request(port, "OPTIONS", path, {
            origin: "https://dashboard.example",
            "access-control-request-method": "GET",
            "access-control-request-headers": "authorization"
          })
          assert.strictEqual(readout.status, 204, path)
          assert.strictEqual(readout.headers["access-control-allow-origin"], "*", path)
          assert.include(readout.headers["access-control-allow-methods"], "GET", path)
          assert.include(readout.headers["access-control-allow-headers"], "authorization", path)
          const refused = yield* request(port, "GET", path, { origin: "https://dashboard.example" })
          assert.isAtLeast(refused.status, 400, path)
          assert.strictEqual(refused.headers["access-control-allow-origin"], "*", path)
        }
        // Only the readout's own paths: another segment under /api/experiments is no CORS route.
        const other = yield* request(port, "OPTIONS", "/api/experiments/x/results/more", {
          origin: "https://dashboard.example",
          "access-control-request-method": "GET"
        })
        assert.isUndefined(other.headers["access-control-allow-origin"])
        // Trading is not a browser-facing route: no CORS there.
        const trade = yield* request(port, "OPTIONS", "/api/tokens/SAGE/buy", { origin: "https://app.example" })
        assert.isUndefined(trade.headers["access-control-allow-origin"])
      })
  )
})

layer(
  HttpTest({
    env: {
      KEEL_CORS_ORIGINS_MARKETPLACE: "https://market.example",
      KEEL_CORS_ORIGINS_PRODUCT: "https://app.example, https://www.app.example/"
    }
  }),
  { timeout: "30 seconds", excludeTestServices: true }
)("CORS with allowed origins per surface", (it) => {
  it.effect("an allowed origin is echoed with Vary: Origin; any other gets no CORS headers", () =>
    Effect.gen(function* () {
      const port = yield* serverPort
      const ok = yield* request(port, "GET", "/api/agents", { origin: "https://market.example" })
      assert.strictEqual(ok.headers["access-control-allow-origin"], "https://market.example")
      assert.include(ok.headers.vary, "Origin")
      const other = yield* request(port, "GET", "/api/agents", { origin: "https://app.example" })
      assert.isUndefined(other.headers["access-control-allow-origin"])
      const product = yield* request(port, "OPTIONS", "/api/experiments/assign", {
        origin: "https://www.app.example",
        "access-control-request-method": "GET"
      })
      assert.strictEqual(product.headers["access-control-allow-origin"], "https://www.app.example")
      const refused = yield* request(port, "OPTIONS", "/api/experiments/assign", {
        origin: "https://evil.example",
        "access-control-request-method": "GET"
      })
      assert.isUndefined(refused.headers["access-control-allow-origin"])
      assert.isUndefined(refused.headers["access-control-allow-methods"])
      // The readout follows the product's list unless KEEL_CORS_ORIGINS_READOUT is set.
      const readout = yield* request(port, "OPTIONS", "/api/analytics/summary", {
        origin: "https://app.example",
        "access-control-request-method": "GET",
        "access-control-request-headers": "authorization"
      })
      assert.strictEqual(readout.headers["access-control-allow-origin"], "https://app.example")
    })
  )
})

layer(
  HttpTest({
    env: {
      KEEL_CORS_ORIGINS_PRODUCT: "https://app.example",
      KEEL_CORS_ORIGINS_READOUT: "https://dashboard.example"
    }
  }),
  { timeout: "30 seconds", excludeTestServices: true }
)("CORS with the readout's own origins", (it) => {
  it.effect("KEEL_CORS_ORIGINS_READOUT decides the readout's origins, and only the readout's", () =>
    Effect.gen(function* () {
      const port = yield* serverPort
      const preflight = (path: string, origin: string) =>
        request(port, "OPTIONS", path, {
          origin,
          "access-control-request-method": "GET",
          "access-control-request-headers": "authorization"
        })
      const results = "/api/experiments/onboarding-copy/results"
      assert.strictEqual(
        (yield* preflight(results, "https://dashboard.example")).headers["access-control-allow-origin"],
        "https://dashboard.example"
      )
      assert.isUndefined((yield* preflight(results, "https://app.example")).headers["access-control-allow-origin"])
      assert.isUndefined(
        (yield* preflight("/api/experiments/assign", "https://dashboard.example")).headers[
          "access-control-allow-origin"
        ]
      )
    })
  )
})
