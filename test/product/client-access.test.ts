import * as fs from "node:fs"
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as YAML from "yaml"
import { HttpTest } from "../support/http.js"
import { collectSites, DEMO_SITE_ID } from "../support/keel.js"
import { registryDir } from "./registry-fixture.js"

const examplePage = fs.readFileSync(new URL("../../examples/web/index.html", import.meta.url), "utf8")
const exampleRegistry = YAML.parse(
  fs.readFileSync(new URL("../../examples/product-registry.yml", import.meta.url), "utf8")
) as { apps: Array<{ app_id: string; journeys: Array<{ platform: string }> }> }

/** What the example page sends: a text/plain JSON batch for its own site id. */
const pageSiteId = /const SITE_ID = "([^"]+)"/.exec(examplePage)?.[1] ?? ""

const collect = (siteId: string) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const body = JSON.stringify({
      site_id: siteId,
      events: [{ event_id: crypto.randomUUID(), name: "pageview", timestamp: Date.now(), visitor_id: "v-demo" }]
    })
    const response = yield* client.execute(
      HttpClientRequest.post("/api/analytics/web/collect").pipe(
        HttpClientRequest.setHeader("origin", "null"),
        HttpClientRequest.bodyText(body, "text/plain")
      )
    )
    return { status: response.status, body: (yield* response.json) as Record<string, unknown> }
  }).pipe(Effect.scoped)

describe("the demo's collect allow-list", () => {
  it("is the demo registry's web app, which the example page reports as", () => {
    assert.strictEqual(pageSiteId, DEMO_SITE_ID)
    assert.include(examplePage, "/api/analytics/web/collect")
    const web = exampleRegistry.apps.find((app) => app.journeys.some((j) => j.platform === "web"))
    assert.strictEqual(web?.app_id, DEMO_SITE_ID)
  })

  it("KEEL_COLLECT_SITES wins when set (even empty); without it, demo mode alone allow-lists the demo site", () => {
    assert.deepStrictEqual([...collectSites(undefined, true)], [DEMO_SITE_ID])
    assert.deepStrictEqual([...collectSites(undefined, false)], [])
    assert.deepStrictEqual([...collectSites("a, b", true)], ["a", "b"])
    assert.deepStrictEqual([...collectSites("", true)], [])
  })
})

layer(HttpTest({ settings: { demoData: true } }), { timeout: "60 seconds" })("demo mode, out of the box", (it) => {
  it.effect("the example page's events are accepted; other sites stay 403", () =>
    Effect.gen(function* () {
      const accepted = yield* collect(pageSiteId)
      assert.strictEqual(accepted.status, 202)
      assert.strictEqual(accepted.body.accepted, 1)
      const other = yield* collect("intruder")
      assert.strictEqual(other.status, 403)
      assert.strictEqual(other.body.code, "SITE_NOT_ALLOWED")
    })
  )
})

layer(HttpTest({ settings: { demoData: true }, env: { KEEL_COLLECT_SITES: "my-site" } }), { timeout: "60 seconds" })(
  "demo mode with KEEL_COLLECT_SITES",
  (it) => {
    it.effect("the configured list is the whole allow-list", () =>
      Effect.gen(function* () {
        assert.strictEqual((yield* collect("my-site")).status, 202)
        assert.strictEqual((yield* collect(DEMO_SITE_ID)).status, 403)
      })
    )
  }
)

layer(HttpTest({ settings: { demoData: false } }), { timeout: "60 seconds" })("outside demo mode", (it) => {
  it.effect("nothing is allow-listed by default", () =>
    Effect.gen(function* () {
      assert.strictEqual((yield* collect(DEMO_SITE_ID)).status, 403)
    })
  )
})

const fixture = registryDir()

const assign = (key: string | null) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(
      HttpClientRequest.get("/api/experiments/assign").pipe(
        HttpClientRequest.setUrlParams({ app_id: "demo-ios", platform: "ios", surface: "onboarding", subject: "s-1" }),
        key === null ? (r) => r : HttpClientRequest.setHeader("x-client-key", key)
      )
    )
    return {
      status: response.status,
      contentType: response.headers["content-type"] ?? "",
      body: (yield* response.json) as Record<string, unknown>
    }
  }).pipe(Effect.scoped)

layer(HttpTest({ settings: { dataDir: fixture.dir } }), { timeout: "60 seconds" })(
  "assignment without the client key (what the seed's client sends)",
  (it) => {
    it.effect("is a 401 problem naming the header and where the key comes from", () =>
      Effect.gen(function* () {
        for (const key of [null, "", "   "]) {
          const answer = yield* assign(key)
          assert.strictEqual(answer.status, 401)
          assert.isTrue(answer.contentType.startsWith("application/problem+json"))
          assert.strictEqual(answer.body.code, "INVALID_CLIENT_KEY")
          assert.strictEqual(answer.body.header, "X-Client-Key")
          assert.strictEqual(answer.body.reason, "missing")
          const detail = String(answer.body.detail)
          assert.include(detail, "X-Client-Key")
          assert.include(detail, "demo-ios")
          assert.include(detail, "product registry")
          assert.include(detail, "docs/product-registry.md")
          // No key of the registry is ever disclosed.
          assert.notInclude(JSON.stringify(answer.body), "pk_test")
        }
        const wrong = yield* assign("pk_not_this_apps_key")
        assert.strictEqual(wrong.status, 401)
        assert.strictEqual(wrong.body.reason, "unknown")
        assert.strictEqual((yield* assign("pk_test_ios_0123456789")).status, 200)
      })
    )
  }
)
