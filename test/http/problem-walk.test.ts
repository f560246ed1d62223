import * as fs from "node:fs"
import * as Http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { commitFiles, initRepo } from "../groundtruth/git-fixture.js"
import { CLIENT_KEY, registryDir } from "../product/registry-fixture.js"
import { beaconDocument, vaultGrant } from "../support/controlplane.js"
import { HttpTest, rawBurst } from "../support/http.js"
import {
  ActionAuthority,
  Agents,
  AppTest,
  checksumAddress,
  Database,
  errorClasses,
  FleetRegistry,
  Health,
  HostHealth,
  JobQueue,
  Leases,
  ObjectAccess,
  ObjectGateway,
  ObjectStore,
  ObjectStoreError,
  PLATFORM_CODES,
  problemType,
  type SurfaceName,
  SurfaceNames,
  surfaceApis,
  Vault
} from "../support/keel.js"
import { fundedWallet, launchAgent, SilentMarketAgent, serverPort } from "../support/market.js"
import { decoderFor, type OpenApiSchema } from "../support/openapi.js"

// Issue 22, item 4: every error code of every surface, provoked over HTTP, and every answer checked against
// one shape: the five problem members, the title that Node writes on the status line, snake_case extension
// members only (no `_tag`, no `message`, no decoder tree), `errors: [{path, message}]` for VALIDATION_FAILED,
// addresses in EIP-55 form — and against the OpenAPI document of its surface, as a generated client decodes.

const root = fileURLToPath(new URL("../..", import.meta.url))
const ADMIN = "walk-admin-token-0123456789"
const SITE = "walk-site"

/** Codes no request can produce on purpose, each with the reason; everything else must be walked. */
const UNREACHABLE: Record<string, string> = {
  INTERNAL_ERROR: "a defect (a bug) by definition; its body is tested on a failing route in server.test.ts",
  BAD_REQUEST_BODY:
    "the platform's non-JSON body decoders (URL-encoded, multipart) are never reached: form bodies are 415 first"
}
const UNREACHABLE_ON: Partial<Record<SurfaceName, Record<string, string>>> = {
  controlplane: {
    VALIDATION_FAILED:
      "no input of PUT /api/host-health is decoded by the HttpApi decoder (the beacon is: BEACON_INVALID)"
  }
}

interface Sent {
  readonly method: string
  readonly url: string
  readonly headers?: Record<string, string>
  readonly body?: string
}

interface Received {
  readonly status: number
  readonly statusMessage: string
  readonly headers: Http.IncomingHttpHeaders
  // biome-ignore lint/suspicious/noExplicitAny: a problem body, checked member by member
  readonly body: any
}

/** Node's own client: the status line's reason phrase is what the title must match. */
const exchange = (port: number, sent: Sent) =>
  Effect.async<Received>((resume) => {
    const request = Http.request(
      {
        host: "127.0.0.1",
        port,
        method: sent.method,
        path: sent.url,
        headers: {
          ...(sent.body === undefined ? {} : { "content-type": "application/json" }),
          ...sent.headers,
          connection: "close"
        }
      },
      (response) => {
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8")
          let body: unknown = text
          try {
            body = JSON.parse(text)
          } catch {}
          resume(
            Effect.succeed({
              status: response.statusCode ?? 0,
              statusMessage: response.statusMessage ?? "",
              headers: response.headers,
              body
            })
          )
        })
      }
    )
    request.on("error", (error) => resume(Effect.die(error)))
    request.end(sent.body)
  })

const specs = new Map<string, OpenApiSchema>()
const openApiOf = (port: number, surface: SurfaceName) =>
  Effect.gen(function* () {
    const cached = specs.get(surface)
    if (cached !== undefined) return cached
    const answer = yield* exchange(port, { method: "GET", url: `/docs/${surface}/openapi.json` })
    assert.strictEqual(answer.status, 200)
    specs.set(surface, answer.body)
    return answer.body as OpenApiSchema
  })

/** Where an answer is declared: the route's response for its status, or the surface's `default`. */
const declaredSchema = (spec: OpenApiSchema, route: string | undefined, method: string, status: number) => {
  const operation = route === undefined ? undefined : spec.paths[route]?.[method.toLowerCase()]
  const response = operation?.responses?.[String(status)] ?? operation?.responses?.default
  const schema = response?.content?.["application/problem+json"]?.schema
  return schema ?? { $ref: "#/components/schemas/Problem" }
}

const walked = new Map<SurfaceName, Set<string>>(SurfaceNames.map((surface) => [surface, new Set<string>()]))

/** The one shape every error answer has, whoever produced it. */
const checkProblem = (what: string, answer: Received, status: number, code: string) => {
  assert.strictEqual(answer.status, status, `${what}: ${JSON.stringify(answer.body)}`)
  assert.strictEqual(answer.body.code, code, what)
  assert.match(String(answer.headers["content-type"]), /^application\/problem\+json/, what)
  const body = answer.body as Record<string, unknown>
  assert.strictEqual(body.type, problemType(code), what)
  assert.strictEqual(body.status, status, what)
  assert.strictEqual(body.title, answer.statusMessage, `${what}: the title is the status line's reason phrase`)
  assert.isString(body.detail, what)
  assert.isAbove(String(body.detail).length, 0, what)
  assert.notInclude(String(body.detail), "\n", `${what}: a one-line detail, not a schema dump`)
  assert.isAtMost(String(body.detail).length, 300, `${what}: a short detail`)
  for (const internal of ["_tag", "message", "issues"]) assert.notProperty(body, internal, what)
  for (const key of Object.keys(body)) assert.match(key, /^[a-z][a-z0-9_]*$/, `${what}: member ${key}`)
  if (code === "VALIDATION_FAILED") {
    assert.isArray(body.errors, what)
    assert.isAbove((body.errors as Array<unknown>).length, 0, what)
    for (const error of body.errors as Array<Record<string, unknown>>) {
      assert.deepStrictEqual(Object.keys(error).sort(), ["message", "path"], what)
      assert.isString(error.path, what)
      assert.isString(error.message, what)
    }
  } else assert.notProperty(body, "errors", what)
  for (const address of JSON.stringify(body).match(/0x[0-9a-fA-F]{40}/g) ?? [])
    assert.strictEqual(address, checksumAddress(address), `${what}: addresses in EIP-55 form`)
}

/** Sends one request that must be refused with `code`, checks the answer and records the code as walked. */
const expectProblem = (surface: SurfaceName, route: string | undefined, sent: Sent, status: number, code: string) =>
  Effect.flatMap(serverPort, (port) => exchange(port, sent)).pipe(
    Effect.flatMap((answer) => expectAnswer(surface, route, sent, answer, status, code))
  )

/** Checks an answer that must be the refusal `code`, and records the code as walked. */
const expectAnswer = (
  surface: SurfaceName,
  route: string | undefined,
  sent: Pick<Sent, "method" | "url">,
  answer: Received,
  status: number,
  code: string
) =>
  Effect.gen(function* () {
    const port = yield* serverPort
    const what = `${surface} ${sent.method} ${sent.url} → ${status} ${code}`
    checkProblem(what, answer, status, code)
    const spec = yield* openApiOf(port, surface)
    const decode = decoderFor(spec.components.schemas)
    assert.deepStrictEqual(
      decode(declaredSchema(spec, route, sent.method, status), answer.body),
      [],
      `${what}: decodes against the OpenAPI document`
    )
    walked.get(surface)?.add(code)
    return answer
  })

const json = (value: unknown) => JSON.stringify(value)
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** The refusals of the body as such, the same on every surface: one JSON route of each. */
const bodyRefusals = (surface: SurfaceName, route: string, method: string, url: string, headers = {}) =>
  Effect.gen(function* () {
    const at = (body: string, extra: Record<string, string> = {}) => ({
      method,
      url,
      headers: { ...headers, ...extra },
      body
    })
    yield* expectProblem(surface, route, at('{"a":'), 400, "INVALID_JSON")
    yield* expectProblem(surface, route, at(`${"[".repeat(100)}${"]".repeat(100)}`), 400, "JSON_TOO_DEEP")
    yield* expectProblem(surface, route, at(json({ pad: "x".repeat(1_100_000) })), 413, "PAYLOAD_TOO_LARGE")
    yield* expectProblem(
      surface,
      route,
      at("a=b", { "content-type": "application/x-www-form-urlencoded" }),
      415,
      "UNSUPPORTED_MEDIA_TYPE"
    )
  })

/** A vault token whose grant allows `actions` on `hosts` and reads of `items`. */
/** A ground-truth registry that has never validated (version 2), and a docs repository it will name. */
const gtRoot = fs.mkdtempSync(path.join(os.tmpdir(), "keel-walk-gt-"))
const gtRegistry = initRepo(gtRoot, "registry")
commitFiles(gtRegistry, { "sources.yml": "version: 2\nsources: []\n" }, "refused registry")
commitFiles(initRepo(gtRoot, "docs"), { "README.md": "# Docs\n" }, "docs")

const tokenFor = (grant: {
  actions?: Array<string>
  hosts?: Array<string>
  items?: Array<string>
  /** A consumer the example registry lists under host-health-write by default. */
  consumer?: string
}) => vaultGrant({ ...grant, consumer: grant.consumer ?? "beacon-forge-2" })

layer(
  HttpTest({
    settings: { dataDir: registryDir().dir },
    env: {
      KEEL_COLLECT_SITES: SITE,
      KEEL_ADMIN_TOKENS: ADMIN,
      KEEL_REGISTRY: path.join(root, "examples", "registry.yml"),
      GT_REGISTRY_REPO: gtRegistry,
      KEEL_TRUSTED_PROXIES: "127.0.0.0/8,::1/128",
      MARKET_RATE_LIMIT_PUBLIC: "100000",
      MARKET_RATE_LIMIT_AUTHENTICATED: "5",
      // One trade at a time per ticker: a burst is refused with OVERLOADED (the walk's other trades are sequential).
      MARKET_TRADE_QUEUE: "1"
    }
  }),
  { timeout: "120 seconds", excludeTestServices: true }
)("every error code of every surface, one problem shape", (it) => {
  it.effect("marketplace", () =>
    Effect.gen(function* () {
      const m = (route: string | undefined, sent: Sent, status: number, code: string) =>
        expectProblem("marketplace", route, sent, status, code)
      const buyRoute = "/api/tokens/{ticker}/buy"
      const agentKey = yield* launchAgent("WALK")
      const w = yield* fundedWallet(9001, "1000")
      const other = yield* fundedWallet(9002, "10")
      const buy = (ticker: string, body: Record<string, unknown>, headers: Record<string, string> = bearer(w.key)) => ({
        method: "POST",
        url: `/api/tokens/${ticker}/buy`,
        headers,
        body: json({ user_id: w.address, ...body })
      })

      yield* bodyRefusals("marketplace", buyRoute, "POST", "/api/tokens/WALK/buy", bearer(w.key))
      const invalid = yield* m(buyRoute, buy("WALK", { amount: "lots" }), 400, "VALIDATION_FAILED")
      assert.deepStrictEqual(
        invalid.body.errors.map((e: { path: string }) => e.path),
        ["amount"]
      )
      yield* m(undefined, { method: "GET", url: "/api/agents/WALK/nothing-here" }, 404, "NOT_FOUND")
      yield* launchAgent("WALK2")
      const firstPage = yield* exchange(yield* serverPort, { method: "GET", url: "/api/agents?limit=1" })
      const next = /^<([^>]+)>/.exec(String(firstPage.headers.link))?.[1]
      assert.isDefined(next)
      yield* m("/api/agents", { method: "GET", url: `${next}&offset=1` }, 400, "INVALID_INPUT")
      yield* m(
        "/api/coin/balance",
        {
          method: "GET",
          url: `/api/coin/balance?user_id=${w.address}`,
          headers: bearer("keel_no_such_key_0123456789")
        },
        401,
        "UNAUTHORIZED"
      )
      yield* m("/api/agents/{ticker}", { method: "GET", url: "/api/agents/NOPE" }, 404, "AGENT_NOT_FOUND")

      yield* launchAgent("PAUSD")
      yield* (yield* Agents).transition("PAUSD", "pause")
      yield* m(buyRoute, buy("PAUSD", { amount: 1 }), 409, "AGENT_NOT_TRADING")
      yield* m(buyRoute, buy("WALK", { amount: 1, min_tokens_out: 1e12 }), 409, "SLIPPAGE_EXCEEDED")
      yield* m(buyRoute, buy("WALK", { amount: 1e-10 }), 422, "TRADE_TOO_SMALL")
      yield* launchAgent("FULL")
      yield* m(buyRoute, buy("FULL", { amount: 500, fill_or_kill: true }), 422, "ORDER_NOT_FILLED")
      assert.strictEqual((yield* exchange(yield* serverPort, buy("FULL", { amount: 500 }))).status, 200)
      yield* m(buyRoute, buy("FULL", { amount: 1 }), 409, "CURVE_COMPLETE")
      const poor = yield* m(
        buyRoute,
        { ...buy("WALK", { amount: 100 }, bearer(other.key)), body: json({ user_id: other.address, amount: 100 }) },
        422,
        "INSUFFICIENT_FUNDS"
      )
      assert.strictEqual(poor.body.account, `wallet:${other.address}`)
      yield* m(
        "/api/tokens/{ticker}/sell",
        {
          method: "POST",
          url: "/api/tokens/WALK/sell",
          headers: bearer(other.key),
          body: json({ user_id: other.address, amount: 5 })
        },
        422,
        "INSUFFICIENT_TOKENS"
      )
      const once = { ...bearer(w.key), "idempotency-key": "walk-order-1" }
      yield* exchange(yield* serverPort, buy("WALK", { amount: 1 }, once))
      yield* m(buyRoute, buy("WALK", { amount: 2 }, once), 422, "IDEMPOTENCY_KEY_REUSED")
      yield* m(
        buyRoute,
        { ...buy("WALK", { amount: 1 }), body: json({ user_id: other.address, amount: 1 }) },
        403,
        "WALLET_MISMATCH"
      )
      yield* m(buyRoute, buy("WALK", { amount: 1 }, bearer(agentKey)), 403, "WALLET_REQUIRED")
      const chat = (key: string) => ({
        method: "POST",
        url: "/api/chat",
        headers: bearer(key),
        body: json({ message: "hi", message_type: "chat" })
      })
      yield* m("/api/chat", chat(w.key), 403, "AGENT_KEY_REQUIRED")
      const goneKey = yield* launchAgent("GONE")
      yield* (yield* Agents).transition("GONE", "retire")
      yield* m("/api/chat", chat(goneKey), 403, "AGENT_CANNOT_CHAT")
      // A burst on one ticker beyond its queue: the trades it could not take are refused, not failed.
      const crowd = yield* fundedWallet(9003, "10")
      const burst = yield* rawBurst(
        yield* serverPort,
        Array.from({ length: 30 }, () => {
          const body = json({ user_id: crowd.address, amount: 0.01 })
          return `POST /api/tokens/WALK/buy HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${crowd.key}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`
        })
      )
      const overloaded = burst.find((answer) => answer.status === 503)
      assert.isDefined(overloaded, `a burst of 30 gets a 503: ${burst.map((a) => a.status).join(",")}`)
      yield* expectAnswer(
        "marketplace",
        buyRoute,
        { method: "POST", url: "/api/tokens/WALK/buy" },
        { ...overloaded!, body: JSON.parse(overloaded!.body) },
        503,
        "OVERLOADED"
      )
      assert.strictEqual(overloaded!.headers["retry-after"], "1")
      // The authenticated class allows 5 a minute per principal here: the 6th is refused.
      const balance = { method: "GET", url: `/api/coin/balance?user_id=${other.address}`, headers: bearer(other.key) }
      for (let i = 0; i < 5; i++) yield* exchange(yield* serverPort, balance)
      const limited = yield* m("/api/coin/balance", balance, 429, "RATE_LIMITED")
      assert.isDefined(limited.headers["retry-after"])
    })
  )

  it.effect("ground truth", () =>
    Effect.gen(function* () {
      const g = (route: string | undefined, sent: Sent, status: number, code: string) =>
        expectProblem("groundtruth", route, sent, status, code)
      yield* bodyRefusals("groundtruth", "/ask", "POST", "/ask")
      yield* g("/ask", { method: "POST", url: "/ask", body: json({ question: 42 }) }, 400, "VALIDATION_FAILED")
      yield* g(undefined, { method: "GET", url: "/assets/a/b/0/content/more" }, 404, "NOT_FOUND")
      yield* g(
        "/ask",
        { method: "POST", url: "/ask", headers: { "x-forwarded-for": "203.0.113.9" }, body: json({ question: "x" }) },
        401,
        "UNAUTHORIZED"
      )
      // A loopback client naming another Host (DNS rebinding) while no GT_TOKENS is set.
      yield* g(
        "/search",
        { method: "GET", url: "/search?q=x", headers: { host: "rebind.example" } },
        421,
        "HOST_NOT_ALLOWED"
      )
      yield* g("/search", { method: "GET", url: "/search?q=x&repo=nope" }, 404, "UNKNOWN_REPO")
      const ingest = (body: unknown) => ({ method: "POST", url: "/ingest/repo", body: json(body) })
      // Unreachable before any registry was accepted: unavailable, not refused.
      fs.renameSync(gtRegistry, `${gtRegistry}.away`)
      yield* g("/ingest/repo", ingest({}), 503, "REGISTRY_UNAVAILABLE")
      fs.renameSync(`${gtRegistry}.away`, gtRegistry)
      const refused = yield* g("/ingest/repo", ingest({}), 422, "REGISTRY_REFUSED")
      assert.strictEqual(refused.body.fields[0]?.path, "version")
      commitFiles(
        gtRegistry,
        {
          "sources.yml":
            "version: 1\nsources:\n  - { name: docs, url: ../docs }\n  - { name: calls, url: ../docs, kind: transcript }\n"
        },
        "valid"
      )
      yield* g("/ingest/repo", ingest({ repo: "docs", ref: "no-such-ref" }), 422, "UNKNOWN_REF")
      yield* g("/ingest/repo", ingest({ repo: "calls" }), 409, "SOURCE_DISABLED")
      yield* g("/assets/{product}/{kind}", { method: "GET", url: "/assets/nope/logo" }, 404, "ASSET_NOT_FOUND")
    })
  )

  it.effect("product", () =>
    Effect.gen(function* () {
      const p = (route: string | undefined, sent: Sent, status: number, code: string) =>
        expectProblem("product", route, sent, status, code)
      const admin = bearer(ADMIN)
      yield* bodyRefusals("product", "/api/onboarding/events", "POST", "/api/onboarding/events", {
        "x-client-key": CLIENT_KEY
      })
      const results = "/api/experiments/{experiment_id}/results"
      const experiment = (query: string, headers: Record<string, string> = admin) => ({
        method: "GET",
        url: `/api/experiments/onboarding-copy/results${query}`,
        headers
      })
      yield* p(results, experiment(""), 400, "VALIDATION_FAILED")
      yield* p(undefined, { method: "GET", url: "/api/public/nothing/here/at-all" }, 404, "NOT_FOUND")
      const assign = "/api/experiments/assign?app_id=demo-ios&platform=ios&surface=onboarding&subject=s-1"
      yield* p("/api/experiments/assign", { method: "GET", url: assign }, 401, "INVALID_CLIENT_KEY")
      yield* p(
        "/api/experiments/assign",
        { method: "GET", url: assign.replace("demo-ios", "nope"), headers: { "x-client-key": CLIENT_KEY } },
        404,
        "APP_NOT_FOUND"
      )
      yield* p(results, experiment("?metric=signup&from=yesterday"), 400, "INVALID_DATE")
      yield* p(results, experiment("?metric=signup&from=2026-02-01&to=2026-01-01"), 400, "INVALID_RANGE")
      yield* p(results, experiment("?metric=no-such-event"), 400, "UNKNOWN_METRIC")
      yield* p(
        results,
        { method: "GET", url: "/api/experiments/nope/results?metric=signup", headers: admin },
        404,
        "EXPERIMENT_NOT_FOUND"
      )
      yield* p(results, experiment("?metric=signup", {}), 401, "ADMIN_TOKEN_REQUIRED")
      yield* p(results, experiment("?metric=signup", bearer(`${ADMIN}x`)), 401, "ADMIN_TOKEN_INVALID")
      const summary = "/api/analytics/summary"
      yield* p(
        summary,
        { method: "GET", url: `${summary}?site=keel-docs&interval=week`, headers: admin },
        400,
        "INVALID_INTERVAL"
      )
      yield* p(
        summary,
        { method: "GET", url: `${summary}?site=keel-docs&limit=0`, headers: admin },
        400,
        "INVALID_LIMIT"
      )
      const collect = "/api/analytics/web/collect"
      yield* p(collect, { method: "POST", url: collect, body: json({ events: [] }) }, 400, "MALFORMED_BATCH")
      yield* p(
        collect,
        { method: "POST", url: collect, body: json({ site_id: "intruder", events: [{}] }) },
        403,
        "SITE_NOT_ALLOWED"
      )
      yield* p(
        "/api/public/blog/{surface}/{slug}",
        { method: "GET", url: "/api/public/blog/news/nope" },
        404,
        "POST_NOT_FOUND"
      )
    })
  )

  it.effect("control plane", () =>
    Effect.gen(function* () {
      const route = "/api/host-health"
      const put = (token: string | undefined, body: unknown) => ({
        method: "PUT",
        url: route,
        headers: token === undefined ? {} : bearer(token),
        body: json(body)
      })
      const c = (sent: Sent, status: number, code: string) => expectProblem("controlplane", route, sent, status, code)
      const { token } = yield* tokenFor({ actions: ["host-health-write"], hosts: ["forge-2"] })
      yield* bodyRefusals("controlplane", route, "PUT", route, bearer(token))
      yield* expectProblem("controlplane", undefined, { method: "GET", url: "/api/host-health/nope" }, 404, "NOT_FOUND")
      yield* c(put(undefined, beaconDocument("forge-2", "2026-11-23T10:00:00.000Z")), 401, "VAULT_DENIED")
      yield* c(put(token, beaconDocument("forge-1", "2026-11-23T10:00:00.000Z")), 403, "VAULT_FORBIDDEN")
      yield* c(put(token, beaconDocument("forge-2", "yesterday")), 400, "BEACON_INVALID")
      const ghost = yield* tokenFor({ actions: ["host-health-write"], hosts: ["ghost"] })
      yield* c(put(ghost.token, beaconDocument("ghost", "2026-11-23T10:00:00.000Z")), 400, "UNKNOWN_HOST")
      const stranger = yield* tokenFor({ actions: ["host-health-write"], hosts: ["forge-2"], consumer: "walk" })
      const notHeld = yield* c(
        put(stranger.token, beaconDocument("forge-2", "2026-11-23T10:00:00.000Z")),
        403,
        "ACTION_NOT_HELD"
      )
      assert.strictEqual(notHeld.body.action, "host-health-write")
      const stored = yield* exchange(
        yield* serverPort,
        put(token, beaconDocument("forge-2", "2026-11-23T11:00:00.000Z"))
      )
      assert.strictEqual(stored.status, 200)
      yield* c(put(token, beaconDocument("forge-2", "2026-11-23T10:30:00.000Z")), 409, "BEACON_STALE")

      // The object API.
      const ops = (yield* tokenFor({ actions: ["object-read", "object-write", "release-submit"], consumer: "ops" }))
        .token
      const object = (method: string, key: string, body?: string, headers: Record<string, string> = {}) => ({
        method,
        url: `/api/objects/${key}`,
        headers: { ...bearer(ops), ...headers },
        ...(body === undefined ? {} : { body })
      })
      const o = (route: string, sent: Sent, status: number, code: string) =>
        expectProblem("controlplane", route, sent, status, code)
      const one = "/api/objects/*"
      yield* o(one, object("GET", "state/walk/none.json"), 404, "OBJECT_NOT_FOUND")
      yield* o(one, object("PUT", "elsewhere/x.json", "x"), 403, "OBJECT_WRITE_UNAUTHORIZED")
      yield* o(one, object("PUT", "state//x.json", "x"), 400, "INVALID_OBJECT_KEY")
      yield* exchange(yield* serverPort, object("PUT", "state/walk/once.json", "one"))
      const failed = yield* o(
        one,
        object("PUT", "state/walk/once.json", "two", { "if-none-match": "*" }),
        412,
        "PRECONDITION_FAILED"
      )
      assert.isString(failed.body.current_sha256)
      yield* exchange(yield* serverPort, object("PUT", "releases/walk/1.0.0/manifest.json", "m1"))
      yield* o(one, object("PUT", "releases/walk/1.0.0/manifest.json", "m2"), 409, "NON_IMMUTABLE_RELEASE_WRITE")
      // A storage-root handoff holds this host's storage-write fence.
      yield* (yield* Leases).acquire("storage-fence", "handoff:walk", "1 minute")
      const fenced = yield* o(one, object("PUT", "state/walk/fenced.json", "x"), 503, "STORAGE_FENCED")
      assert.strictEqual(fenced.body.holder, "handoff:walk")
      yield* (yield* Leases).release("storage-fence", "handoff:walk")

      // Workflows.
      const reader = (yield* tokenFor({ actions: ["fleet-read"], consumer: "ops" })).token
      yield* expectProblem(
        "controlplane",
        "/api/workflows/fleet-probe/{execution_id}",
        { method: "GET", url: "/api/workflows/fleet-probe/no-such-run", headers: bearer(reader) },
        404,
        "WORKFLOW_NOT_FOUND"
      )
      yield* expectProblem(
        "controlplane",
        "/api/workflows/release-run/{run_id}",
        { method: "GET", url: `/api/workflows/release-run/${"0".repeat(32)}`, headers: bearer(reader) },
        404,
        "RELEASE_RUN_NOT_FOUND"
      )
      // Not a run id at all (a path of its own): no such run, never a store error.
      yield* expectProblem(
        "controlplane",
        "/api/workflows/release-run/{run_id}",
        { method: "GET", url: "/api/workflows/release-run/..%2F..%2Fx", headers: bearer(reader) },
        404,
        "RELEASE_RUN_NOT_FOUND"
      )

      // The storage-root handoff's reconcile path.
      const reconcile = "/api/host/storage-root-reconcile"
      const handoff = (yield* tokenFor({ actions: ["storage-reconcile-read"], consumer: "ops", hosts: ["forge-1"] }))
        .token
      yield* expectProblem(
        "controlplane",
        reconcile,
        { method: "GET", url: `${reconcile}?target=forge-1&phase=status`, headers: bearer(handoff) },
        400,
        "INVALID_RECONCILE_REQUEST"
      )
      yield* expectProblem(
        "controlplane",
        reconcile,
        { method: "POST", url: `${reconcile}?target=forge-1&transaction=w&phase=run`, headers: bearer(handoff) },
        401,
        "STORAGE_RECONCILE_UNAUTHORIZED"
      )
      yield* expectProblem(
        "controlplane",
        reconcile,
        { method: "GET", url: `${reconcile}?target=forge-1&transaction=walk&phase=status`, headers: bearer(handoff) },
        503,
        "STORAGE_RECONCILIATION_FAILED"
      )

      // The handoff worker's queue: a target without storage; a drain whose running job outlasts its bound.
      const queueRoute = (tail: string) => `/api/fleet/queue/targets/{target}/${tail}`
      const worker = (yield* tokenFor({ actions: ["storage-queue"], consumer: "handoff-forge-1", hosts: ["forge-2"] }))
        .token
      yield* expectProblem(
        "controlplane",
        queueRoute("pause"),
        { method: "GET", url: "/api/fleet/queue/targets/forge-2/pause", headers: bearer(worker) },
        404,
        "STORAGE_UNDECLARED"
      )
      const jobs = yield* JobQueue
      yield* jobs.submit({ kind: "command", target: "forge-1", argv: ["true"] })
      yield* jobs.claim("walker", 60_000)
      const drainer = (yield* tokenFor({ actions: ["storage-queue"], consumer: "handoff-forge-1", hosts: ["forge-1"] }))
        .token
      const timedOut = yield* expectProblem(
        "controlplane",
        queueRoute("drain"),
        {
          method: "POST",
          url: "/api/fleet/queue/targets/forge-1/drain",
          headers: { ...bearer(drainer), "content-type": "application/json" },
          body: '{"transaction":"walk","timeout_seconds":0}'
        },
        409,
        "QUEUE_DRAIN_TIMED_OUT"
      )
      assert.strictEqual(timedOut.body.running.length, 1)
      yield* jobs.setTargetPause("forge-1", { set: false })

      // Jobs over HTTP: an unknown job; an idempotency key that names another command.
      const submitter = (yield* tokenFor({ actions: ["job-submit"], consumer: "gateway-forge-2", hosts: ["forge-1"] }))
        .token
      yield* expectProblem(
        "controlplane",
        "/api/fleet/jobs/{id}",
        { method: "GET", url: "/api/fleet/jobs/job_none", headers: bearer(submitter) },
        404,
        "JOB_NOT_FOUND"
      )
      yield* jobs.submit({ kind: "precheck", target: "forge-1", argv: ["true"], idempotencyKey: "walk-key" })
      yield* expectProblem(
        "controlplane",
        "/api/fleet/jobs",
        {
          method: "POST",
          url: "/api/fleet/jobs",
          headers: { ...bearer(submitter), "content-type": "application/json" },
          body: '{"kind":"precheck","target":"forge-1","argv":["false"],"idempotency_key":"walk-key"}'
        },
        409,
        "JOB_KEY_REUSED"
      )
      // A key naming another target's job: refused, without that job's id, target or command.
      yield* jobs.submit({ kind: "precheck", target: "forge-2", argv: ["secret-cmd"], idempotencyKey: "other-key" })
      const hidden = yield* expectProblem(
        "controlplane",
        "/api/fleet/jobs",
        {
          method: "POST",
          url: "/api/fleet/jobs",
          headers: { ...bearer(submitter), "content-type": "application/json" },
          body: '{"kind":"precheck","target":"forge-1","argv":["true"],"idempotency_key":"other-key"}'
        },
        409,
        "JOB_KEY_REUSED"
      )
      assert.isUndefined(hidden.body.job)
      for (const secret of ["forge-2", "secret-cmd"]) assert.notInclude(JSON.stringify(hidden.body), secret)

      // The reconciler: another process's tick holds the fleet-wide lease.
      yield* (yield* Leases).acquire("autonomy:tick", "another-server", "1 minute")
      const ensurer = (yield* tokenFor({ actions: ["service-ensure"], consumer: "ops" })).token
      const busy = yield* expectProblem(
        "controlplane",
        "/api/fleet/services/runs",
        { method: "POST", url: "/api/fleet/services/runs", headers: bearer(ensurer) },
        409,
        "TICK_IN_PROGRESS"
      )
      assert.strictEqual(busy.body.holder, "another-server")
      yield* (yield* Leases).release("autonomy:tick", "another-server")
    })
  )

  it.effect("vault", () =>
    Effect.gen(function* () {
      const tokenRoute = "/v1/vault/token"
      const readRoute = "/v1/vault/items/{item}/{field}"
      const v = (route: string | undefined, sent: Sent, status: number, code: string) =>
        expectProblem("vault", route, sent, status, code)
      const vault = yield* Vault
      yield* bodyRefusals("vault", tokenRoute, "POST", tokenRoute)
      yield* v(tokenRoute, { method: "POST", url: tokenRoute, body: json({ grant_id: 7 }) }, 400, "VALIDATION_FAILED")
      yield* v(undefined, { method: "GET", url: "/v1/vault/nothing-here" }, 404, "NOT_FOUND")
      yield* vault.putItem("walk-item", { value: "walk-secret-value" }).pipe(Effect.orDie)
      yield* vault.putItem("walk-gone", { value: "x" }).pipe(Effect.orDie)
      yield* vault.putItem("walk-bent", { value: "y" }).pipe(Effect.orDie)
      const { credential, token } = yield* tokenFor({ items: ["walk-item", "walk-gone", "walk-bent"] })
      yield* v(
        tokenRoute,
        { method: "POST", url: tokenRoute, body: json({ ...credential, secret: `${credential.secret}x` }) },
        401,
        "VAULT_DENIED"
      )
      const read = (item: string) => ({ method: "GET", url: `/v1/vault/items/${item}/value`, headers: bearer(token) })
      yield* v(readRoute, read("other"), 403, "VAULT_FORBIDDEN")
      yield* vault.removeItem("walk-gone")
      yield* v(readRoute, read("walk-gone"), 404, "VAULT_ITEM_NOT_FOUND")
      const sql = yield* SqlClient.SqlClient
      yield* sql`UPDATE vault_items SET tag = ${new Uint8Array(16)} WHERE name = 'walk-bent'`.pipe(Effect.orDie)
      const corrupt = yield* v(readRoute, read("walk-bent"), 500, "VAULT_CORRUPT")
      assert.notInclude(JSON.stringify(corrupt.body), "walk-secret-value")
    })
  )
})

describe("a server whose dependencies fail", () => {
  const BrokenDatabase = Layer.succeed(
    Database,
    Database.make({
      dialect: "sqlite",
      ping: Effect.die(new Error("SQLITE_IOERR: disk I/O error")),
      info: () => Effect.die(new Error("unavailable"))
    })
  )
  const refuse = (key: string) =>
    Effect.fail(new ObjectStoreError({ code: "OBJECT_STORE_ERROR", key, detail: "ENOSPC: no space left on device" }))
  // Reads find nothing and every write fails: the beacon cannot be stored, no registry snapshot is kept.
  const FullDisk = Layer.succeed(ObjectStore, {
    scheme: "full",
    get: () => Effect.succeed(Option.none()),
    head: () => Effect.succeed(Option.none()),
    put: refuse,
    putIfAbsent: refuse,
    putIfMatch: refuse,
    write: (key) => refuse(key),
    read: () => Effect.succeed(Option.none()),
    list: () => Effect.succeed([]),
    delete: refuse
  })
  const registryCopy = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-walk-")), "registry.yml")
  fs.copyFileSync(path.join(root, "examples", "registry.yml"), registryCopy)
  const dataDir = registryDir().dir
  // Fresh layers: the same layer value is otherwise built once per graph, and the base graph has these.
  const FleetOnFullDisk = Layer.merge(Layer.fresh(HostHealth.Default), Layer.fresh(ObjectAccess.Default)).pipe(
    Layer.provideMerge(Layer.fresh(ActionAuthority.Default)),
    Layer.provideMerge(Layer.fresh(FleetRegistry.Default)),
    Layer.provide(Layer.fresh(ObjectGateway.Default).pipe(Layer.provide(FullDisk)))
  )
  // One application graph, with the broken parts laid over it.
  const base = AppTest({ dataDir })
  const app = Layer.mergeAll(
    base,
    Health.Default.pipe(Layer.provide(BrokenDatabase)),
    FleetOnFullDisk.pipe(Layer.provide(base))
  )
  layer(
    HttpTest({
      settings: { dataDir },
      app,
      // No admin tokens; a registry file the test removes halfway; no ground-truth source registry.
      env: { KEEL_REGISTRY: registryCopy }
    }),
    { timeout: "60 seconds", excludeTestServices: true }
  )("health, the readout, the beacon store and the registry", (it) => {
    it.effect(
      "UNHEALTHY, ADMIN_TOKENS_NOT_CONFIGURED, BEACON_STORE_FAILED, REGISTRY_UNAVAILABLE, REGISTRY_NOT_CONFIGURED",
      () =>
        Effect.gen(function* () {
          yield* expectProblem("groundtruth", "/health", { method: "GET", url: "/health" }, 503, "UNHEALTHY")
          yield* expectProblem(
            "groundtruth",
            "/ingest/repo",
            { method: "POST", url: "/ingest/repo", body: json({}) },
            503,
            "REGISTRY_NOT_CONFIGURED"
          )
          yield* expectProblem("product", "/api/health", { method: "GET", url: "/api/health" }, 503, "UNHEALTHY")
          yield* expectProblem(
            "product",
            "/api/analytics/summary",
            { method: "GET", url: "/api/analytics/summary?site=keel-docs", headers: bearer(ADMIN) },
            401,
            "ADMIN_TOKENS_NOT_CONFIGURED"
          )
          const { token } = yield* tokenFor({
            actions: ["host-health-write"],
            hosts: ["forge-1"],
            consumer: "beacon-forge-1"
          })
          const put = {
            method: "PUT",
            url: "/api/host-health",
            headers: bearer(token),
            body: json(beaconDocument("forge-1", "2026-11-23T10:00:00.000Z"))
          }
          yield* expectProblem("controlplane", "/api/host-health", put, 503, "BEACON_STORE_FAILED")
          const ops = yield* tokenFor({ actions: ["object-write"], consumer: "ops" })
          yield* expectProblem(
            "controlplane",
            "/api/objects/*",
            { method: "PUT", url: "/api/objects/state/walk.json", headers: bearer(ops.token), body: "x" },
            503,
            "OBJECT_STORE_ERROR"
          )
          // Without the registry (and with no snapshot of it) nobody can be authorized: fail closed.
          fs.rmSync(registryCopy)
          yield* expectProblem("controlplane", "/api/host-health", put, 503, "REGISTRY_UNAVAILABLE")
        })
    )
  })
})

describe("a server whose Redis is away", () => {
  // Nothing listens on port 1: every count through Redis fails, and trading fails closed by default.
  layer(HttpTest({ env: { KEEL_REDIS_URL: "redis://127.0.0.1:1" } }), {
    timeout: "60 seconds",
    excludeTestServices: true
  })("the shared rate-limit counters", (it) => {
    it.effect("RATE_LIMIT_UNAVAILABLE", () =>
      Effect.gen(function* () {
        yield* launchAgent("AWAY")
        const w = yield* fundedWallet(9101, "10")
        const order = {
          method: "POST",
          url: "/api/tokens/AWAY/buy",
          headers: { ...bearer(w.key), "content-type": "application/json" },
          body: json({ user_id: w.address, amount: 1 })
        }
        const refused = yield* expectProblem(
          "marketplace",
          "/api/tokens/{ticker}/buy",
          order,
          503,
          "RATE_LIMIT_UNAVAILABLE"
        )
        assert.strictEqual(refused.headers["retry-after"], "2")
      })
    )
  })
})

describe("a server whose tickers' actors do not answer", () => {
  layer(
    HttpTest({
      app: AppTest({}, { marketAgent: SilentMarketAgent }),
      env: { MARKET_TRADE_TIMEOUT: "300 millis" }
    }),
    { timeout: "60 seconds", excludeTestServices: true }
  )("the trade's wait bound", (it) => {
    it.effect("TRADE_OUTCOME_UNKNOWN", () =>
      Effect.gen(function* () {
        yield* launchAgent("MUTE")
        const w = yield* fundedWallet(9102, "10")
        const order = {
          method: "POST",
          url: "/api/tokens/MUTE/buy",
          headers: { ...bearer(w.key), "content-type": "application/json", "idempotency-key": "walk-mute-1" },
          body: json({ user_id: w.address, amount: 1 })
        }
        const unknown = yield* expectProblem(
          "marketplace",
          "/api/tokens/{ticker}/buy",
          order,
          503,
          "TRADE_OUTCOME_UNKNOWN"
        )
        assert.strictEqual(unknown.headers["retry-after"], "1")
        assert.strictEqual((unknown.body as { idempotency_key: string }).idempotency_key, "walk-mute-1")
      })
    )
  })
})

describe("coverage", () => {
  layer(Layer.empty)("the walk", (it) => {
    it("provoked every code each surface declares, and the platform's own", () => {
      for (const surface of SurfaceNames) {
        const declared = errorClasses(surfaceApis[surface]).flatMap((error) => error.codes)
        const expected = new Set([...declared, ...PLATFORM_CODES])
        const exempt = { ...UNREACHABLE, ...UNREACHABLE_ON[surface] }
        const missing = [...expected].filter((code) => !walked.get(surface)?.has(code) && exempt[code] === undefined)
        assert.deepStrictEqual(missing, [], `${surface}: codes no request of the walk produced`)
      }
    })
  })
})
