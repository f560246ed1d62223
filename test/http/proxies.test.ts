import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { assert, describe, it, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { HttpTest } from "../support/http.js"
import { TrustedProxies } from "../support/keel.js"
import { serverPort } from "../support/market.js"

const proxiesWith = (setting: string) =>
  Effect.provide(
    TrustedProxies.Default.pipe(
      Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["KEEL_TRUSTED_PROXIES", setting]]))))
    )
  )

describe("the client address behind proxies", () => {
  it.effect("headers count only from a trusted peer; the chain is read from the right past trusted hops", () =>
    Effect.gen(function* () {
      const proxies = yield* TrustedProxies
      const xff = (value: string) => ({ "x-forwarded-for": value })
      assert.strictEqual(proxies.clientAddress("127.0.0.1", xff("203.0.113.5")), "203.0.113.5")
      assert.strictEqual(proxies.clientAddress("::ffff:127.0.0.1", xff("203.0.113.5")), "203.0.113.5")
      // A client may write anything on the left; the right-most untrusted hop is the one our proxy saw.
      assert.strictEqual(proxies.clientAddress("127.0.0.1", xff("1.2.3.4, 198.51.100.7, 10.0.0.2")), "198.51.100.7")
      assert.strictEqual(
        proxies.clientAddress("10.0.0.2", { forwarded: 'for="[2001:db8::1]:4711";proto=https, for=10.0.0.3' }),
        "2001:db8::1"
      )
      // An untrusted peer's headers are ignored.
      assert.strictEqual(proxies.clientAddress("198.51.100.9", xff("127.0.0.1")), "198.51.100.9")
      assert.strictEqual(proxies.clientAddress("127.0.0.1", {}), "127.0.0.1")
      // Fail closed: a hop that is no address (garbage, `unknown`, an obfuscated `_hidden`) is no client, never the
      // trusted proxy's own (loopback) address; nor is a client two headers disagree about.
      assert.strictEqual(proxies.clientAddress("127.0.0.1", xff("not-an-ip")), "unknown")
      assert.strictEqual(proxies.clientAddress("127.0.0.1", xff("8.8.8.8, garbage")), "unknown")
      for (const obfuscated of ["for=unknown", "for=_hidden"])
        assert.strictEqual(proxies.clientAddress("127.0.0.1", { forwarded: obfuscated }), "unknown", obfuscated)
      assert.strictEqual(
        proxies.clientAddress("127.0.0.1", { forwarded: "for=127.0.0.1", "x-forwarded-for": "8.8.8.8" }),
        "unknown"
      )
      assert.strictEqual(
        proxies.clientAddress("127.0.0.1", { forwarded: "for=203.0.113.5", "x-forwarded-for": "203.0.113.5" }),
        "203.0.113.5"
      )
    }).pipe(proxiesWith("127.0.0.0/8, 10.0.0.0/8"))
  )

  it.effect("with none trusted (the default), a forwarded header changes nothing", () =>
    Effect.gen(function* () {
      const proxies = yield* TrustedProxies
      assert.strictEqual(proxies.clientAddress("127.0.0.1", { "x-forwarded-for": "203.0.113.5" }), "127.0.0.1")
    }).pipe(proxiesWith(""))
  )
})

/** A reverse proxy in front of the test server, appending the client named by `x-test-client` to X-Forwarded-For. */
const reverseProxy = (upstreamPort: number) =>
  Effect.acquireRelease(
    Effect.promise(
      () =>
        new Promise<{ port: number; server: http.Server }>((resolve) => {
          const server = http.createServer((req, res) => {
            const client = String(req.headers["x-test-client"] ?? "")
            const { "x-test-client": _client, ...rest } = req.headers
            const headers = { ...rest, "x-forwarded-for": client }
            const upstream = http.request(
              { host: "127.0.0.1", port: upstreamPort, method: req.method, path: req.url, headers },
              (answer) => {
                res.writeHead(answer.statusCode ?? 502, answer.headers)
                answer.pipe(res)
              }
            )
            req.pipe(upstream)
          })
          server.listen(0, "127.0.0.1", () => resolve({ port: (server.address() as AddressInfo).port, server }))
        })
    ),
    ({ server }) => Effect.sync(() => server.close())
  )

const get = (port: number, path: string, client: string) =>
  Effect.promise(
    () =>
      new Promise<number>((resolve) => {
        http
          .get({ host: "127.0.0.1", port, path, headers: { "x-test-client": client }, agent: false }, (res) => {
            res.resume()
            res.on("end", () => resolve(res.statusCode ?? 0))
          })
          .on("error", () => resolve(0))
      })
  )

layer(HttpTest({ env: { KEEL_TRUSTED_PROXIES: "127.0.0.1/32", MARKET_RATE_LIMIT_PUBLIC: "3" } }), {
  timeout: "30 seconds",
  excludeTestServices: true
})("through a trusted reverse proxy", (it) => {
  it.effect(
    "each forwarded client has its own public rate limit; ground truth is loopback only for loopback clients",
    () =>
      Effect.gen(function* () {
        const { port } = yield* reverseProxy(yield* serverPort)
        for (let i = 0; i < 3; i++) assert.strictEqual(yield* get(port, "/api/agents", "203.0.113.1"), 200)
        assert.strictEqual(yield* get(port, "/api/agents", "203.0.113.1"), 429)
        assert.strictEqual(yield* get(port, "/api/agents", "203.0.113.2"), 200) // another client, another bucket
        // No GT_TOKENS: loopback clients only — a remote client through the local proxy is not one.
        assert.strictEqual(yield* get(port, "/repos", "203.0.113.3"), 401)
        assert.strictEqual(yield* get(port, "/repos", "127.0.0.1"), 200)
      }).pipe(Effect.scoped)
  )
})

layer(HttpTest({ env: { MARKET_RATE_LIMIT_PUBLIC: "3" } }), { timeout: "30 seconds", excludeTestServices: true })(
  "through an untrusted reverse proxy",
  (it) => {
    it.effect("X-Forwarded-For is ignored: every client behind it shares the proxy's bucket", () =>
      Effect.gen(function* () {
        const { port } = yield* reverseProxy(yield* serverPort)
        for (let i = 0; i < 3; i++) assert.strictEqual(yield* get(port, "/api/agents", `198.51.100.${i}`), 200)
        assert.strictEqual(yield* get(port, "/api/agents", "198.51.100.99"), 429)
      }).pipe(Effect.scoped)
    )
  }
)
