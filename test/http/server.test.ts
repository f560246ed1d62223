import {
  HttpApi,
  HttpApiBuilder,
  HttpApiEndpoint,
  HttpApiGroup,
  HttpApiSchema,
  HttpClient,
  HttpClientRequest,
  HttpLayerRouter,
  HttpServer
} from "@effect/platform"
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { chunkedBody, HttpTest, rawRequest } from "../support/http.js"
import {
  AppTest,
  Database,
  groundTruthClient,
  Health,
  productClient,
  SurfaceNames,
  vaultClient
} from "../support/keel.js"

// A JSON endpoint of the test's own, to drive the shared middleware with payloads.
class Missing extends Schema.TaggedError<Missing>()(
  "ThingMissing",
  { detail: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}
class ProbeApi extends HttpApi.make("probe").add(
  HttpApiGroup.make("probe")
    .add(
      HttpApiEndpoint.post("echo", "/probe/echo")
        .setPayload(Schema.Struct({ name: Schema.String, count: Schema.Int }))
        .addSuccess(Schema.Struct({ name: Schema.String, count: Schema.Int }))
    )
    .add(HttpApiEndpoint.get("missing", "/probe/missing").addError(Missing))
) {}
const ProbeRoutes = HttpLayerRouter.addHttpApi(ProbeApi).pipe(
  Layer.provide(
    HttpApiBuilder.group(ProbeApi, "probe", (handlers) =>
      handlers
        .handle("echo", ({ payload }) => Effect.succeed(payload))
        .handle("missing", () => Effect.fail(new Missing({ detail: "there is no such thing" })))
    )
  )
)

const BODY_LIMIT = 1024 * 1024
const TEN_MB = 10 * 1024 * 1024

const serverPort = Effect.map(HttpServer.HttpServer, (server) =>
  server.address._tag === "TcpAddress" ? server.address.port : 0
)

const getJson = (path: string) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.get(path)
    return {
      status: response.status,
      headers: response.headers,
      body: (yield* response.json) as Record<string, unknown>
    }
  }).pipe(Effect.scoped)

const assertProblem = (body: Record<string, unknown>, status: number, code: string) => {
  assert.strictEqual(body.status, status)
  assert.strictEqual(body.code, code)
  assert.strictEqual(typeof body.title, "string")
  assert.strictEqual(typeof body.detail, "string")
  assert.strictEqual(body.type, `urn:keel:problem:${code.toLowerCase().replace(/_/g, "-")}`)
}

layer(HttpTest({ extraRoutes: ProbeRoutes, settings: { bodyLimitBytes: BODY_LIMIT } }), { timeout: "30 seconds" })(
  "the HTTP server",
  (it) => {
    it.effect("answers both health probes with status ok after checking the database", () =>
      Effect.gen(function* () {
        const product = yield* getJson("/api/health")
        assert.strictEqual(product.status, 200)
        assert.deepStrictEqual(product.body, { status: "ok" })
        const groundTruth = yield* getJson("/health")
        assert.strictEqual(groundTruth.status, 200)
        assert.deepStrictEqual(groundTruth.body, { status: "ok" })
      })
    )

    it.effect("the OpenAPI documents publish what the routes demand: the client key, the ground truth's bearer", () =>
      Effect.gen(function* () {
        type Parameter = { name: string; in: string; required?: boolean }
        type Operation = { parameters?: Array<Parameter>; security?: Array<Record<string, Array<string>>> }
        type Spec = {
          paths: Record<string, Record<string, Operation>>
          components: { securitySchemes?: Record<string, { type: string; scheme?: string }> }
        }
        const product = (yield* getJson("/docs/product/openapi.json")).body as unknown as Spec
        // A missing X-Client-Key is always 401: the header is required, not optional.
        for (const [route, method] of [
          ["/api/experiments/assign", "get"],
          ["/api/onboarding/bundle", "get"],
          ["/api/onboarding/events", "post"]
        ] as const) {
          const key = product.paths[route]![method]!.parameters?.find(
            (p) => p.in === "header" && p.name === "x-client-key"
          )
          assert.strictEqual(key?.required, true, `${method} ${route}`)
        }
        // The ground truth enforces a bearer token when GT_TOKENS is set: the document declares the scheme.
        const groundTruth = (yield* getJson("/docs/groundtruth/openapi.json")).body as unknown as Spec
        const schemes = Object.entries(groundTruth.components.securitySchemes ?? {})
        const bearer = schemes.find(([, scheme]) => scheme.type === "http" && scheme.scheme === "bearer")
        assert.isDefined(bearer, JSON.stringify(groundTruth.components.securitySchemes))
        for (const [route, method] of [
          ["/repos", "get"],
          ["/search", "get"],
          ["/ask", "post"],
          ["/ingest/repo", "post"],
          ["/assets", "get"]
        ] as const)
          assert.deepStrictEqual(groundTruth.paths[route]![method]!.security, [{ [bearer![0]]: [] }], route)
        assert.deepStrictEqual(groundTruth.paths["/health"]!.get!.security ?? [], [], "/health asks for nothing")
      })
    )

    it.effect("serves each surface's OpenAPI document and Swagger UI, and lists them at /docs", () =>
      Effect.gen(function* () {
        const client = yield* HttpClient.HttpClient
        for (const surface of SurfaceNames) {
          const spec = yield* getJson(`/docs/${surface}/openapi.json`)
          assert.strictEqual(spec.status, 200)
          assert.strictEqual(spec.body.openapi, "3.1.0")
          const ui = yield* client.get(`/docs/${surface}`).pipe(Effect.scoped)
          assert.strictEqual(ui.status, 200)
          assert.match(ui.headers["content-type"] ?? "", /text\/html/)
        }
        const product = yield* getJson("/docs/product/openapi.json")
        assert.property(product.body.paths, "/api/health")
        const groundTruth = yield* getJson("/docs/groundtruth/openapi.json")
        assert.property(groundTruth.body.paths, "/health")
        // The storage-root reconcile routes check their query on the raw request, and still publish it.
        const controlPlane = yield* getJson("/docs/controlplane/openapi.json")
        type Operation = {
          parameters: Array<{ name: string; in: string; required: boolean; schema: { maxLength?: number } }>
        }
        const paths = (spec: { body: { paths?: unknown } }) =>
          spec.body.paths as Record<string, Record<string, Operation>>
        const reconcile = paths(controlPlane)["/api/host/storage-root-reconcile"]!
        for (const method of ["get", "post"]) {
          const query = reconcile[method]!.parameters.filter((p) => p.in === "query").map((p) => [p.name, p.required])
          assert.deepStrictEqual(query, [
            ["target", true],
            ["transaction", true],
            ["phase", true]
          ])
        }
        // The product parameters' published bound is the one enforced: 256 characters.
        const assign = paths(product)["/api/experiments/assign"]!.get!.parameters
        assert.strictEqual(assign.find((p) => p.name === "subject")?.schema.maxLength, 256)
        // The revalidation answers the routes give themselves are published too.
        for (const route of [
          "/api/onboarding/bundle",
          "/api/public/blog/{surface}",
          "/api/public/blog/{surface}/{slug}"
        ])
          assert.property(
            (paths(product)[route]!.get as unknown as { responses: Record<string, unknown> }).responses,
            "304",
            route
          )
        const chat = (yield* getJson("/docs/marketplace/openapi.json")) as { body: { paths?: unknown } }
        const before = paths(chat)["/api/chat"]!.get!.parameters.find((p) => p.name === "before")
        assert.strictEqual((before?.schema as { maximum?: number } | undefined)?.maximum, 999_999_999_999_999)
        const index = yield* getJson("/docs")
        assert.deepStrictEqual(
          (index.body.surfaces as Array<{ surface: string }>).map((s) => s.surface),
          [...SurfaceNames]
        )
      })
    )

    it.effect("the typed clients built from the same contracts call the server", () =>
      Effect.gen(function* () {
        const product = yield* productClient()
        const groundTruth = yield* groundTruthClient()
        assert.deepStrictEqual({ ...(yield* product.health.health()) }, { status: "ok" })
        assert.deepStrictEqual({ ...(yield* groundTruth.health.health()) }, { status: "ok" })
        // The vault's client too: a refusal comes back as the contract's error class.
        const vault = yield* vaultClient()
        const denied = yield* Effect.flip(
          vault.tokens.exchange({ payload: { grant_id: "grant_nope", consumer: "nobody", secret: "wrong" } })
        )
        assert.strictEqual(denied._tag, "VaultDenied")
      })
    )

    it.effect("an unknown route is a 404 problem, not an empty body", () =>
      Effect.gen(function* () {
        const response = yield* getJson("/api/nothing-here")
        assert.strictEqual(response.status, 404)
        assert.strictEqual(response.headers["content-type"], "application/problem+json")
        assertProblem(response.body, 404, "NOT_FOUND")
        assert.include(String(response.body.detail), "/api/nothing-here")
      })
    )

    it.effect("a typed error keeps its status and gets a code derived from its tag", () =>
      Effect.gen(function* () {
        const response = yield* getJson("/probe/missing")
        assert.strictEqual(response.status, 404)
        assertProblem(response.body, 404, "THING_MISSING")
        assert.strictEqual(response.body.detail, "there is no such thing")
      })
    )

    it.effect("invalid JSON is a 400 problem with code INVALID_JSON", () =>
      Effect.gen(function* () {
        const client = yield* HttpClient.HttpClient
        const response = yield* client.execute(
          HttpClientRequest.post("/probe/echo").pipe(HttpClientRequest.bodyText('{"name": "a", ', "application/json"))
        )
        assert.strictEqual(response.status, 400)
        assert.strictEqual(response.headers["content-type"], "application/problem+json")
        assertProblem((yield* response.json) as Record<string, unknown>, 400, "INVALID_JSON")
      }).pipe(Effect.scoped)
    )

    it.effect("a body that does not match the schema is a 400 problem naming the field", () =>
      Effect.gen(function* () {
        const client = yield* HttpClient.HttpClient
        const response = yield* client.execute(
          HttpClientRequest.post("/probe/echo").pipe(HttpClientRequest.bodyUnsafeJson({ name: "a", count: "many" }))
        )
        assert.strictEqual(response.status, 400)
        const body = (yield* response.json) as Record<string, unknown>
        assertProblem(body, 400, "VALIDATION_FAILED")
        assert.include(String(body.detail), "count")
      }).pipe(Effect.scoped)
    )

    it.effect("a valid body passes the limit untouched", () =>
      Effect.gen(function* () {
        const client = yield* HttpClient.HttpClient
        const response = yield* client.execute(
          HttpClientRequest.post("/probe/echo").pipe(HttpClientRequest.bodyUnsafeJson({ name: "a", count: 2 }))
        )
        assert.strictEqual(response.status, 200)
        assert.deepStrictEqual(yield* response.json, { name: "a", count: 2 })
      }).pipe(Effect.scoped)
    )

    it.effect("a 10 MB body with Content-Length gets 413 in the problem shape, and the server keeps serving", () =>
      Effect.gen(function* () {
        const port = yield* serverPort
        const body = Buffer.alloc(TEN_MB, "x")
        const response = yield* rawRequest(
          port,
          `POST /probe/echo HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
          [body]
        )
        assert.strictEqual(response.status, 413)
        assert.strictEqual(response.headers["content-type"], "application/problem+json")
        assertProblem(JSON.parse(response.body), 413, "PAYLOAD_TOO_LARGE")
        const health = yield* getJson("/api/health")
        assert.strictEqual(health.status, 200)
      })
    )

    it.effect(
      "a 10 MB chunked body (no Content-Length) gets 413 in the problem shape, and the server keeps serving",
      () =>
        Effect.gen(function* () {
          const port = yield* serverPort
          const response = yield* rawRequest(
            port,
            "POST /probe/echo HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
            chunkedBody(TEN_MB)
          )
          assert.strictEqual(response.status, 413)
          assertProblem(JSON.parse(response.body), 413, "PAYLOAD_TOO_LARGE")
          const health = yield* getJson("/health")
          assert.strictEqual(health.status, 200)
        })
    )

    it.effect("a chunked body under the limit is read whole", () =>
      Effect.gen(function* () {
        const port = yield* serverPort
        const json = JSON.stringify({ name: "y".repeat(200_000), count: 1 })
        const parts = [`${Buffer.byteLength(json).toString(16)}\r\n${json}\r\n`, "0\r\n\r\n"]
        const response = yield* rawRequest(
          port,
          "POST /probe/echo HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
          parts
        )
        assert.strictEqual(response.status, 200)
        assert.strictEqual((JSON.parse(response.body) as { name: string }).name.length, 200_000)
      })
    )
  }
)

describe("health when the database does not answer", () => {
  const BrokenDatabase = Layer.succeed(
    Database,
    Database.make({
      dialect: "sqlite",
      ping: Effect.die(new Error("SQLITE_IOERR: disk I/O error")),
      info: () => Effect.die(new Error("unavailable"))
    })
  )
  it.effect("both probes answer 503 in the problem shape", () =>
    Effect.gen(function* () {
      for (const path of ["/api/health", "/health"]) {
        const response = yield* getJson(path)
        assert.strictEqual(response.status, 503)
        assertProblem(response.body, 503, "UNHEALTHY")
        assert.include(String(response.body.detail), "database")
        assert.notInclude(JSON.stringify(response.body), "    at ")
      }
    }).pipe(
      Effect.provide(HttpTest({ app: Layer.merge(AppTest(), Health.Default.pipe(Layer.provide(BrokenDatabase))) }))
    )
  )
})
