import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { HttpServer } from "@effect/platform"
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, FastCheck as fc, Runtime } from "effect"
import { commitFiles, initRepo } from "../groundtruth/git-fixture.js"
import { CLIENT_KEY, registryDir } from "../product/registry-fixture.js"
import { HttpTest, type RawResponse, rawRequest } from "../support/http.js"
import { Vault } from "../support/keel.js"
import { fundedWallet, launchAgent } from "../support/market.js"

// Bounded random input on every JSON route (and on the query of the GET routes) of every surface: deep nesting, numbers at and past the edges of a double, astral characters, lone surrogates,
// NUL, wrong types, not-JSON at all. Whatever is sent: never a 5xx, every 4xx is a problem body, and a
// 400's detail never quotes the body (a refusal of malformed input names fields and what they must be).

const root = fileURLToPath(new URL("../..", import.meta.url))
const SITE = "fuzz-site"
const ADMIN = "fuzz-admin-token-0123456789"
/** A value planted in bodies and queries: no 400's detail may quote it. */
const MARKER = "Kq7-sent-value-marker"
const RUNS = 40
/** Each property stops after this long, and all of them once the file's budget is spent (2 cores: ~60 s). */
const PROPERTY_TIME_LIMIT = Duration.toMillis(Duration.seconds(3))
const FILE_DEADLINE = Date.now() + Duration.toMillis(Duration.seconds(45))

// ---- JSON text ---------------------------------------------------------------------------------------

const NUMBERS = [
  "1e308",
  "-1e308",
  "1e-400",
  "9007199254740993",
  "-9007199254740993",
  "1e999",
  "-1e999",
  "-0",
  "0",
  "0.5",
  "1",
  "-1",
  "1e21",
  "5e-324",
  "1.7976931348623157e308",
  "123456789012345678901234567890"
]

const numberText = fc.oneof(
  fc.constantFrom(...NUMBERS),
  fc.double().map((d) => JSON.stringify(d)),
  fc.integer().map(String)
)

const stringText = fc.oneof(
  fc.constantFrom(
    '"\\ud800"',
    '"\\udfff\\ud800x"',
    '"\\u0000"',
    '"a\\u0000b"',
    '"😀𝕂eel"',
    '""',
    `"${MARKER}"`,
    '"chat"',
    '"2026-01-01T00:00:00.000Z"',
    '"0x0000000000000000000000000000000000000000"',
    '"1e308"',
    '"9007199254740993"'
  ),
  fc.string({ unit: "binary", maxLength: 24 }).map((s) => JSON.stringify(s)),
  fc
    .string({ unit: fc.constantFrom("[", "{", "]", "}", "\\", '"', "\ud800"), maxLength: 60 })
    .map((s) => JSON.stringify(s)),
  fc.integer({ min: 1, max: 4000 }).map((n) => JSON.stringify(`${MARKER}${"x".repeat(n)}`))
)

const leafText = fc.oneof(numberText, stringText, fc.constantFrom("null", "true", "false"))

/** Arrays and objects nested past the limit (or just around it), ending in any leaf. */
const OPENERS = ["[", '{"a":', '{"events":', "[1,", '{"site_id":"x","events":['] as const
const closerOf = (opener: string) => (opener.startsWith("{") ? (opener.endsWith("[") ? "]}" : "}") : "]")
const deepText = fc
  .tuple(
    fc.oneof(fc.integer({ min: 60, max: 70 }), fc.integer({ min: 71, max: 3000 })),
    fc.array(fc.constantFrom(...OPENERS), { minLength: 1, maxLength: 3 }),
    leafText
  )
  .map(([depth, openers, leaf]) => {
    let open = ""
    let close = ""
    for (let i = 0; i < depth; i++) {
      const opener = openers[i % openers.length]!
      open += opener
      close = closerOf(opener) + close
    }
    return `${open}${leaf}${close}`
  })

/** Any JSON value, objects mostly keyed by the route's own field names. */
const valueText = (keys: ReadonlyArray<string>) =>
  fc.letrec<{ value: string; array: string; object: string }>((tie) => ({
    value: fc.oneof({ maxDepth: 4, depthSize: "small" }, leafText, tie("array"), tie("object")),
    array: fc.array(tie("value"), { maxLength: 4 }).map((items) => `[${items.join(",")}]`),
    object: fc
      .array(
        fc.tuple(
          keys.length > 0
            ? fc.oneof(fc.constantFrom(...keys), fc.string({ maxLength: 8 }))
            : fc.string({ maxLength: 8 }),
          tie("value")
        ),
        {
          maxLength: 6
        }
      )
      .map((entries) => `{${entries.map(([key, value]) => `${JSON.stringify(key)}:${value}`).join(",")}}`)
  })).value

/** Every path to a value inside `template` (object fields and array items). */
const pathsOf = (value: unknown, prefix: ReadonlyArray<string | number> = []): Array<Array<string | number>> => {
  if (Array.isArray(value)) return value.flatMap((item, i) => [[...prefix, i], ...pathsOf(item, [...prefix, i])])
  if (typeof value === "object" && value !== null)
    return Object.entries(value).flatMap(([key, item]) => [[...prefix, key], ...pathsOf(item, [...prefix, key])])
  return []
}

const PLACEHOLDER = "@@fuzzed-value@@"
const replaced = (value: unknown, at: ReadonlyArray<string | number>): unknown => {
  if (at.length === 0) return PLACEHOLDER
  const [head, ...rest] = at
  if (Array.isArray(value)) return value.map((item, i) => (i === head ? replaced(item, rest) : item))
  return { ...(value as object), [head as string]: replaced((value as Record<string, unknown>)[head as string], rest) }
}

/** The route's valid body with one value (at any depth) replaced by anything. */
const mutated = (template: unknown, keys: ReadonlyArray<string>) =>
  fc
    .tuple(
      fc.constantFrom(...pathsOf(template)),
      fc.oneof({ weight: 4, arbitrary: valueText(keys) }, { weight: 1, arbitrary: deepText })
    )
    .map(([at, value]) => JSON.stringify(replaced(template, at)).replace(JSON.stringify(PLACEHOLDER), value))

/** Not JSON at all, or not UTF-8. */
const garbage = (template: unknown) =>
  fc.oneof(
    fc.string({ unit: "binary", maxLength: 60 }),
    fc.nat().map((n) => {
      const text = JSON.stringify(template)
      return text.slice(0, n % text.length)
    }),
    fc.constantFrom(
      "",
      `{"a":"\u0000"}`,
      `\ufeff${JSON.stringify(template)}`,
      "nul",
      "[1,]",
      "{'a':1}",
      `{"question": "${MARKER}`,
      "NaN",
      "Infinity"
    ),
    fc.uint8Array({ minLength: 1, maxLength: 40 }).map((bytes) => Buffer.concat([Buffer.from([0xff, 0xfe]), bytes]))
  )

const CONTENT_TYPES = [
  "application/json",
  "application/json; charset=utf-8",
  "text/plain;charset=UTF-8",
  undefined,
  "application/octet-stream",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=fuzz"
] as const

const bodyFor = (template: unknown, keys: ReadonlyArray<string>) =>
  fc.record({
    body: fc.oneof(
      { weight: 5, arbitrary: mutated(template, keys) },
      { weight: 2, arbitrary: valueText(keys) },
      { weight: 1, arbitrary: deepText },
      { weight: 1, arbitrary: garbage(template) }
    ),
    contentType: fc.oneof(
      { weight: 6, arbitrary: fc.constant("application/json" as string | undefined) },
      { weight: 3, arbitrary: fc.constantFrom(...CONTENT_TYPES) }
    ),
    chunked: fc.boolean()
  })

// ---- query strings -----------------------------------------------------------------------------------

/** Percent-encodes the UTF-8 bytes of `text` (a lone surrogate becomes U+FFFD, as any encoder does). */
const pct = (text: string) =>
  [...Buffer.from(text, "utf8")]
    .map((byte) =>
      /[A-Za-z0-9\-._~]/.test(String.fromCharCode(byte)) ? String.fromCharCode(byte) : `%${byte.toString(16)}`
    )
    .join("")

const base64url = (text: string) => Buffer.from(text, "utf8").toString("base64url")

const queryValue = fc.oneof(
  fc.constantFrom(...NUMBERS, "NaN", "Infinity", "-Infinity", "", "%", "%zz", "%ff", "%00", "%ed%a0%80", MARKER),
  fc.string({ unit: "binary", maxLength: 20 }).map(pct),
  fc.string({ maxLength: 20 }).map(pct),
  // Cursors are base64url JSON: nested deep, or of the wrong shape.
  fc.oneof(deepText, valueText(["at", "seq", "ticker", "created_at", "market_cap_units"])).map(base64url)
)

/** `/a/{x}/b?p=…`: path parameters and a random subset of the query parameters, each any value. */
const urlFor = (pathTemplate: string, params: ReadonlyArray<string>) =>
  fc
    .tuple(
      fc.array(fc.oneof(queryValue, fc.constantFrom("keel", "demo", "x")), { minLength: 4, maxLength: 4 }),
      fc.subarray([...params]),
      fc.array(queryValue, { minLength: params.length, maxLength: params.length })
    )
    .map(([segments, chosen, values]) => {
      let i = 0
      const filled = pathTemplate.replace(/\{[^}]+\}/g, () => segments[i++] || "x")
      const query = chosen.map((name) => `${name}=${values[params.indexOf(name)]}`).join("&")
      return query === "" ? filled : `${filled}?${query}`
    })

// ---- the routes --------------------------------------------------------------------------------------

interface JsonRoute {
  readonly method: "POST" | "PUT"
  readonly path: string
  /** A body the route accepts; fuzzed bodies are variations of it. */
  readonly template: unknown
  readonly headers?: Record<string, string>
}

interface QueryRoute {
  readonly path: string
  readonly params: ReadonlyArray<string>
  readonly headers?: Record<string, string>
}

const keysOf = (value: unknown): Array<string> =>
  Array.isArray(value)
    ? value.flatMap(keysOf)
    : typeof value === "object" && value !== null
      ? Object.entries(value).flatMap(([key, item]) => [key, ...keysOf(item)])
      : []

interface Sent {
  readonly method: string
  readonly url: string
  readonly body: string | Buffer
  readonly contentType: string | undefined
  readonly chunked: boolean
  readonly headers: Record<string, string>
}

const describeSent = (sent: Sent) => {
  const text = typeof sent.body === "string" ? sent.body : `<bytes ${sent.body.toString("hex")}>`
  return `${sent.method} ${sent.url.slice(0, 300)} [${sent.contentType ?? "no content-type"}${sent.chunked ? ", chunked" : ""}] ${text.length > 300 ? `${text.slice(0, 150)}…${text.slice(-150)} (${text.length} chars)` : text}`
}

const exchange = (port: number, sent: Sent) => {
  const bytes = typeof sent.body === "string" ? Buffer.from(sent.body, "utf8") : sent.body
  const headers = [
    `${sent.method} ${sent.url} HTTP/1.1`,
    "Host: localhost",
    ...(sent.contentType === undefined ? [] : [`Content-Type: ${sent.contentType}`]),
    ...Object.entries(sent.headers).map(([name, value]) => `${name}: ${value}`),
    sent.chunked ? "Transfer-Encoding: chunked" : `Content-Length: ${bytes.length}`,
    "Connection: close"
  ]
  const parts = sent.chunked
    ? bytes.length === 0
      ? ["0\r\n\r\n"]
      : [`${bytes.length.toString(16)}\r\n`, bytes, "\r\n0\r\n\r\n"]
    : [bytes]
  return rawRequest(port, `${headers.join("\r\n")}\r\n\r\n`, parts).pipe(
    Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error(`no answer to ${describeSent(sent)}`) })
  )
}

const QUOTE_FREE = new Set([
  "INVALID_JSON",
  "JSON_TOO_DEEP",
  "VALIDATION_FAILED",
  "MALFORMED_BATCH",
  "BAD_REQUEST_BODY",
  "BAD_REQUEST"
])

/** No 5xx; every 4xx a problem body; no 400 quotes the body, and the input refusals quote nothing sent. */
const checkAnswer = (sent: Sent, response: RawResponse) => {
  const what = `${describeSent(sent)}\n→ ${response.status} ${response.body.slice(0, 400)}`
  assert.isAtLeast(response.status, 200, what)
  assert.isBelow(response.status, 500, what)
  if (response.status < 400) return
  assert.strictEqual(response.headers["content-type"], "application/problem+json", what)
  const problem = JSON.parse(response.body) as Record<string, unknown>
  assert.isString(problem.type, what)
  assert.match(String(problem.type), /^urn:keel:problem:[a-z0-9-]+$/, what)
  assert.isString(problem.title, what)
  assert.strictEqual(problem.status, response.status, what)
  assert.isString(problem.detail, what)
  assert.match(String(problem.code), /^[A-Z][A-Z0-9_]*$/, what)
  if (response.status !== 400) return
  const detail = String(problem.detail)
  // Never the body, never a schema failure's value (`, actual …`).
  if (typeof sent.body === "string" && sent.body.length >= 16) assert.notInclude(detail, sent.body, what)
  assert.notMatch(detail, /,\s*actual\b/, what)
  // The refusals of input as such (not JSON, too deep, wrong shape) quote nothing that was sent. A domain
  // refusal may name the identifier it refuses (`… is not a declared mount of forge-1`).
  if (QUOTE_FREE.has(String(problem.code))) assert.notInclude(detail, MARKER, what)
}

const serverPort = Effect.map(HttpServer.HttpServer, (server) =>
  server.address._tag === "TcpAddress" ? server.address.port : 0
)

/** Runs the property for each route, RUNS requests each, bounded in time. */
const fuzz = (routes: { readonly json?: ReadonlyArray<JsonRoute>; readonly query?: ReadonlyArray<QueryRoute> }) =>
  Effect.gen(function* () {
    const port = yield* serverPort
    const runtime = yield* Effect.runtime<never>()
    const run = (sent: Sent) => Runtime.runPromise(runtime)(exchange(port, sent)).then((r) => checkAnswer(sent, r))
    const options = () => ({
      numRuns: RUNS,
      interruptAfterTimeLimit: Math.max(250, Math.min(PROPERTY_TIME_LIMIT, FILE_DEADLINE - Date.now())),
      markInterruptAsFailure: false
    })
    for (const route of routes.json ?? []) {
      // The fuzzed bodies are variations of one the route accepts: the fuzz reaches past the decoder.
      const template = JSON.stringify(route.template)
      const baseline = yield* exchange(port, {
        method: route.method,
        url: route.path,
        body: template,
        contentType: "application/json",
        chunked: false,
        headers: route.headers ?? {}
      })
      assert.isBelow(baseline.status, 300, `${route.path} ${template}: ${baseline.status} ${baseline.body}`)
      const arbitrary = bodyFor(route.template, keysOf(route.template))
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(arbitrary, ({ body, contentType, chunked }) =>
            run({ method: route.method, url: route.path, body, contentType, chunked, headers: route.headers ?? {} })
          ),
          options()
        )
      )
    }
    for (const route of routes.query ?? []) {
      // A GET carries a body now and then: it is guarded like any other.
      const arbitrary = fc.tuple(
        urlFor(route.path, route.params),
        fc.option(fc.oneof(deepText, valueText(route.params)), { freq: 4 })
      )
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(arbitrary, ([url, body]) =>
            run({
              method: "GET",
              url,
              body: body ?? "",
              contentType: body === null ? undefined : "application/json",
              chunked: false,
              headers: route.headers ?? {}
            })
          ),
          options()
        )
      )
    }
  })

/** A ground-truth registry listing no source: an ingest is answered (with no source), not refused for want of one. */
const emptySourceRegistry = () => {
  const dir = initRepo(fs.mkdtempSync(path.join(os.tmpdir(), "keel-fuzz-gt-")), "registry")
  commitFiles(dir, { "sources.yml": "version: 1\nsources: []\n" }, "no sources")
  return dir
}

const event = {
  event_id: "e-1",
  name: "pageview",
  timestamp: 1_790_000_000_000,
  visitor_id: "v-1",
  session_id: "s-1",
  url: "https://keel.dev/pricing?utm_source=hn",
  referrer: "https://news.ycombinator.com/",
  utm: { source: "hn", medium: "social", campaign: "launch" },
  props: { plan: "team", seats: 3 }
}

layer(
  HttpTest({
    settings: { dataDir: registryDir().dir },
    env: {
      KEEL_COLLECT_SITES: SITE,
      KEEL_ADMIN_TOKENS: ADMIN,
      KEEL_REGISTRY: path.join(root, "examples", "registry.yml"),
      GT_REGISTRY_REPO: emptySourceRegistry(),
      MARKET_RATE_LIMIT_PUBLIC: "1000000",
      MARKET_RATE_LIMIT_AUTHENTICATED: "1000000",
      MARKET_RATE_LIMIT_TRADING: "1000000"
    }
  }),
  { timeout: "60 seconds", excludeTestServices: true }
)("fuzzed input on every surface: no 5xx, every 4xx a problem", (it) => {
  it.effect("marketplace (/api/tokens, /api/chat, /api/agents, /api/coin)", () =>
    Effect.gen(function* () {
      const agentKey = yield* launchAgent("FUZZ")
      const wallet = yield* fundedWallet(777, "1000000")
      const trader = { authorization: `Bearer ${wallet.key}` }
      yield* fuzz({
        json: [
          {
            method: "POST",
            path: "/api/tokens/FUZZ/buy",
            template: { user_id: wallet.address, amount: 1, min_tokens_out: 0, fill_or_kill: false },
            headers: trader
          },
          {
            method: "POST",
            path: "/api/tokens/FUZZ/sell",
            template: { user_id: wallet.address, amount: 1, min_coin_out: 0 },
            headers: trader
          },
          {
            method: "POST",
            path: "/api/chat",
            template: { message: "hello", message_type: "chat" },
            headers: { authorization: `Bearer ${agentKey}` }
          }
        ],
        query: [
          { path: "/api/agents", params: ["limit", "offset", "cursor"] },
          { path: "/api/agents/{ticker}", params: [] },
          { path: "/api/tokens", params: ["limit", "offset", "cursor"] },
          { path: "/api/coin/history", params: ["period", "limit", "sampling", "cursor"] },
          { path: "/api/coin/balance", params: ["user_id"], headers: trader },
          { path: "/api/chat", params: ["limit", "before"] }
        ]
      })
    })
  )

  it.effect("ground truth (/search, /ask, /ingest/repo, /assets)", () =>
    fuzz({
      json: [
        { method: "POST", path: "/ask", template: { question: "what is keel?", scope: {} } },
        { method: "POST", path: "/ingest/repo", template: { ref: "main" } }
      ],
      query: [
        { path: "/search", params: ["q", "repo", "limit"] },
        { path: "/assets", params: ["product", "kind", "q"] },
        { path: "/assets/{product}/{kind}/{index}/content", params: [] }
      ]
    })
  )

  it.effect("product (/api/analytics, /api/onboarding, /api/experiments, /api/public/blog)", () =>
    fuzz({
      json: [
        { method: "POST", path: "/api/analytics/web/collect", template: { site_id: SITE, events: [event] } },
        { method: "POST", path: "/api/analytics/mobile/collect", template: { site_id: SITE, events: [event] } },
        {
          method: "POST",
          path: "/api/onboarding/events",
          template: {
            app_id: "demo-ios",
            events: [{ event_id: "o-1", subject: "s-1", step: "welcome", timestamp: 1_790_000_000_000, props: {} }]
          },
          headers: { "x-client-key": CLIENT_KEY }
        }
      ],
      query: [
        {
          path: "/api/experiments/assign",
          params: ["app_id", "platform", "surface", "subject"],
          headers: { "x-client-key": CLIENT_KEY }
        },
        {
          path: "/api/experiments/{id}/results",
          params: ["metric", "from", "to"],
          headers: { authorization: `Bearer ${ADMIN}` }
        },
        {
          path: "/api/analytics/summary",
          params: ["site", "from", "to", "interval", "limit"],
          headers: { authorization: `Bearer ${ADMIN}` }
        },
        {
          path: "/api/onboarding/bundle",
          params: ["app_id", "platform", "subject"],
          headers: { "x-client-key": CLIENT_KEY }
        },
        { path: "/api/public/blog/{surface}", params: ["page", "limit"] },
        { path: "/api/public/blog/{surface}/{slug}", params: [] }
      ]
    })
  )

  it.effect("control plane (/api/host-health)", () =>
    Effect.gen(function* () {
      const vault = yield* Vault
      const grant = yield* vault.createGrant({
        consumer: "beacon-forge-1",
        actions: ["host-health-write"],
        items: [],
        hosts: ["forge-1"],
        ttlMillis: 3_600_000
      })
      const { token } = yield* vault.exchange(grant.credential)
      yield* fuzz({
        json: [
          {
            method: "PUT",
            path: "/api/host-health",
            template: {
              schema: "keel.beacon/v1",
              host: "forge-1",
              os: "linux",
              reported_at: "2026-01-01T00:00:00.000Z",
              writer_version: "fuzz",
              disks: [{ mount: "/", total_bytes: 1000, free_bytes: 400, available_bytes: 300, error: null }],
              units: []
            },
            headers: { authorization: `Bearer ${token}` }
          }
        ]
      })
    })
  )

  it.effect("vault (/v1/vault/token, /v1/vault/items)", () =>
    Effect.gen(function* () {
      const vault = yield* Vault
      const grant = yield* vault.createGrant({
        consumer: "fuzz-consumer",
        actions: ["read"],
        items: ["fuzz-item"],
        hosts: [],
        ttlMillis: 3_600_000
      })
      const { token } = yield* vault.exchange(grant.credential)
      yield* fuzz({
        json: [{ method: "POST", path: "/v1/vault/token", template: grant.credential }],
        query: [{ path: "/v1/vault/items/{item}/{field}", params: [], headers: { authorization: `Bearer ${token}` } }]
      })
    })
  )
})
