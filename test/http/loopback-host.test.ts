import { assert, describe, it, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Layer } from "effect"
import { HttpTest, rawRequest } from "../support/http.js"
import { hostOfHeader, LoopbackTrust } from "../support/keel.js"
import { serverPort } from "../support/market.js"

/** One request over a socket from 127.0.0.1, with exactly the `Host` given (none when undefined). */
const ask = (method: string, path: string, host: string | undefined, extra = "") =>
  Effect.gen(function* () {
    const port = yield* serverPort
    const version = host === undefined ? "HTTP/1.0" : "HTTP/1.1"
    const hostLine = host === undefined ? "" : `Host: ${host.replace("{port}", String(port))}\r\n`
    const body = method === "POST" ? "{}" : ""
    return yield* rawRequest(
      port,
      `${method} ${path} ${version}\r\n${hostLine}${extra}Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`
    )
  })

describe("the Host a loopback client names", () => {
  it.effect("is read as a name or address without its port, brackets or final dot", () =>
    Effect.sync(() => {
      assert.strictEqual(hostOfHeader("LocalHost.:8080"), "localhost")
      assert.strictEqual(hostOfHeader("[::1]:80"), "::1")
      assert.strictEqual(hostOfHeader("127.0.0.1"), "127.0.0.1")
      assert.strictEqual(hostOfHeader("evil.example:1:2"), undefined)
      assert.strictEqual(hostOfHeader("user@localhost"), undefined)
    })
  )

  it.effect("KEEL_SERVER_NAMES with a port or a scheme is a configuration error naming it", () =>
    Effect.gen(function* () {
      for (const setting of ["gt.example:8080", "https://gt.example", "a b"]) {
        const exit = yield* Effect.exit(
          LoopbackTrust.pipe(
            Effect.provide(
              LoopbackTrust.Default.pipe(
                Layer.provide(
                  Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["KEEL_SERVER_NAMES", setting]])))
                )
              )
            )
          )
        )
        assert.isTrue(Exit.isFailure(exit), setting)
        assert.include(String(Exit.isFailure(exit) ? exit.cause : ""), "KEEL_SERVER_NAMES", setting)
      }
    })
  )
})

layer(HttpTest({ env: { KEEL_SERVER_NAMES: "gt.internal.example, [fd00::7]" } }), {
  timeout: "60 seconds",
  excludeTestServices: true
})("ground truth without GT_TOKENS (loopback mode)", (it) => {
  it.effect(
    "a Host that is not loopback nor a configured name is 421 HOST_NOT_ALLOWED on every guarded route (DNS rebinding)",
    () =>
      Effect.gen(function* () {
        for (const host of [
          "rebind.attacker.example",
          "rebind.attacker.example:{port}",
          "127.0.0.1.attacker.example",
          "localhost.attacker.example",
          "[fd00::8]:{port}"
        ]) {
          for (const [method, path] of [
            ["GET", "/repos"],
            ["GET", "/search?q=lease"],
            ["GET", "/assets"],
            ["POST", "/ingest/repo"],
            ["POST", "/ask"]
          ] as const) {
            const answer = yield* ask(method, path, host)
            assert.strictEqual(answer.status, 421, `${method} ${path} with Host ${host}`)
            assert.strictEqual(answer.headers["content-type"], "application/problem+json")
            const problem = JSON.parse(answer.body)
            assert.strictEqual(problem.code, "HOST_NOT_ALLOWED")
            assert.strictEqual(problem.status, 421)
          }
        }
      })
  )

  it.effect(
    "an absolute-form request target is the host asked for, whatever Host says (RFC 9112 §3.2.2): a foreign one is 421",
    () =>
      Effect.gen(function* () {
        for (const target of [
          "http://rebind.attacker.example/repos",
          "http://rebind.attacker.example:{port}/repos",
          "http://[fd00::8]:{port}/repos",
          "http://localhost@rebind.attacker.example/repos",
          "http://rebind.attacker.example@localhost/repos"
        ]) {
          const answer = yield* ask("GET", target.replace("{port}", String(yield* serverPort)), "localhost")
          assert.strictEqual(answer.status, 421, `GET ${target} with Host localhost`)
          assert.strictEqual(JSON.parse(answer.body).code, "HOST_NOT_ALLOWED")
        }
        for (const target of ["http://localhost/repos", "http://127.0.0.1:{port}/repos", "http://[::1]/repos"]) {
          const answer = yield* ask(
            "GET",
            target.replace("{port}", String(yield* serverPort)),
            "rebind.attacker.example"
          )
          assert.strictEqual(answer.status, 200, `GET ${target} with Host rebind.attacker.example`)
        }
      })
  )

  it.effect("loopback names and addresses, with or without a port, and the configured names are answered", () =>
    Effect.gen(function* () {
      for (const host of [
        "localhost",
        "localhost:{port}",
        "LOCALHOST.:{port}",
        "127.0.0.1",
        "127.0.0.1:{port}",
        "127.8.9.10:{port}",
        "[::1]",
        "[::1]:{port}",
        "[::ffff:127.0.0.1]:{port}",
        "gt.internal.example",
        "GT.Internal.Example:443",
        "[fd00::7]:{port}"
      ]) {
        assert.strictEqual((yield* ask("GET", "/repos", host)).status, 200, `Host ${host}`)
      }
      // No Host at all (HTTP/1.0): no browser sends that, so nothing to rebind.
      assert.strictEqual((yield* ask("GET", "/repos", undefined)).status, 200)
      // The health probe is not behind the rule (a probe may name any Host).
      assert.strictEqual((yield* ask("GET", "/health", "rebind.attacker.example")).status, 200)
    })
  )
})

layer(HttpTest({ env: { GT_TOKENS: "gt-secret-token" } }), { timeout: "60 seconds", excludeTestServices: true })(
  "ground truth with GT_TOKENS",
  (it) => {
    it.effect("any Host is answered with a valid token (the token is the rule, not the address)", () =>
      Effect.gen(function* () {
        const answer = yield* ask("GET", "/repos", "gt.public.example", "Authorization: Bearer gt-secret-token\r\n")
        assert.strictEqual(answer.status, 200)
        assert.strictEqual((yield* ask("GET", "/repos", "localhost")).status, 401)
      })
    )
  }
)
