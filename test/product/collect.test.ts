import { HttpClient, HttpClientRequest, HttpServer } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { chunkedBody, HttpTest, rawRequest } from "../support/http.js"
import { pageExpression, utmSourceExpression } from "../support/keel.js"

const SITE = "keel-docs"
const post = (kind: "web" | "mobile", body: unknown, contentType = "application/json") =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(
      HttpClientRequest.post(`/api/analytics/${kind}/collect`).pipe(
        HttpClientRequest.bodyText(typeof body === "string" ? body : JSON.stringify(body), contentType)
      )
    )
    return {
      status: response.status,
      headers: response.headers,
      body: (yield* response.json) as Record<string, unknown>
    }
  }).pipe(Effect.scoped)

const event = (id: string, visitor: string, extra: Record<string, unknown> = {}) => ({
  event_id: id,
  name: "pageview",
  timestamp: 1_790_000_000_000,
  visitor_id: visitor,
  ...extra
})

const count = (table: string, where = "1 = 1") =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ n: number }>`SELECT count(*) AS n FROM ${sql(table)} WHERE ${sql.literal(where)}`
    return rows[0]?.n ?? 0
  })

const port = Effect.map(HttpServer.HttpServer, (s) => (s.address._tag === "TcpAddress" ? s.address.port : 0))

layer(HttpTest({ env: { KEEL_COLLECT_SITES: `${SITE}, keel-app`, KEEL_COLLECT_WEB_BODY_LIMIT: "65536" } }), {
  timeout: "60 seconds"
})("analytics collectors", (it) => {
  it.effect("store a batch and answer 202 with what was accepted", () =>
    Effect.gen(function* () {
      const result = yield* post("web", { site_id: SITE, events: [event("e-1", "v-1"), event("e-2", "v-1")] })
      assert.strictEqual(result.status, 202)
      assert.deepStrictEqual(result.body, { accepted: 2, duplicates: 0, rejected: [] })
      assert.strictEqual(yield* count("analytics_events", "event_id IN ('e-1', 'e-2')"), 2)
    })
  )

  it.effect("accept JSON sent as text/plain, as navigator.sendBeacon does", () =>
    Effect.gen(function* () {
      const result = yield* post(
        "web",
        { site_id: SITE, events: [event("beacon-1", "v-b")] },
        "text/plain;charset=UTF-8"
      )
      assert.strictEqual(result.status, 202)
      assert.strictEqual(result.body.accepted, 1)
    })
  )

  it.effect("a batch replayed 10 times stores each event once; attribution rows equal distinct visitors", () =>
    Effect.gen(function* () {
      const events = Array.from({ length: 30 }, (_, i) => event(`replay-${i}`, `replay-visitor-${i % 7}`))
      const answers = []
      for (let i = 0; i < 10; i++) answers.push((yield* post("mobile", { site_id: "keel-app", events })).body)
      assert.deepStrictEqual(answers[0], { accepted: 30, duplicates: 0, rejected: [] })
      for (const later of answers.slice(1)) assert.deepStrictEqual(later, { accepted: 0, duplicates: 30, rejected: [] })
      assert.strictEqual(yield* count("analytics_events", "event_id LIKE 'replay-%'"), 30)
      assert.strictEqual(yield* count("analytics_attribution", "visitor_id LIKE 'replay-visitor-%'"), 7)
    })
  )

  it.effect("attribution is the visitor's first stored event, recorded once", () =>
    Effect.gen(function* () {
      const first = event("attr-1", "v-attr", {
        url: "https://keel.dev/pricing?utm_source=hn",
        referrer: "https://news.ycombinator.com/",
        utm: { source: "hn", medium: "social", campaign: "launch" }
      })
      const later = event("attr-2", "v-attr", { url: "https://keel.dev/docs", utm: { source: "newsletter" } })
      yield* post("web", { site_id: SITE, events: [first] })
      yield* post("web", { site_id: SITE, events: [later] })
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql`SELECT first_event_id, landing_url, referrer, utm_source, utm_medium, utm_campaign
        FROM analytics_attribution WHERE site_id = ${SITE} AND visitor_id = 'v-attr'`
      assert.deepStrictEqual(rows, [
        {
          first_event_id: "attr-1",
          landing_url: "https://keel.dev/pricing?utm_source=hn",
          referrer: "https://news.ycombinator.com/",
          utm_source: "hn",
          utm_medium: "social",
          utm_campaign: "launch"
        }
      ])
    })
  )

  it.effect("a site that is not allow-listed gets 403 SITE_NOT_ALLOWED and nothing is stored", () =>
    Effect.gen(function* () {
      const result = yield* post("web", { site_id: "intruder", events: [event("x-1", "v-x")] })
      assert.strictEqual(result.status, 403)
      assert.strictEqual(result.body.code, "SITE_NOT_ALLOWED")
      assert.strictEqual(yield* count("analytics_events", "site_id = 'intruder'"), 0)
    })
  )

  it.effect("a malformed envelope is 400; a malformed event is reported and the rest are stored", () =>
    Effect.gen(function* () {
      const notJson = yield* post("web", "{ site_id: ")
      assert.strictEqual(notJson.status, 400)
      assert.strictEqual(notJson.body.code, "INVALID_JSON")
      for (const bad of [{ events: [] }, { site_id: SITE, events: "many" }, [1, 2]]) {
        const result = yield* post("web", bad)
        assert.strictEqual(result.status, 400)
        assert.strictEqual(result.body.code, "MALFORMED_BATCH")
      }
      const tooMany = yield* post("web", {
        site_id: SITE,
        events: Array.from({ length: 501 }, (_, i) => ({ event_id: `m-${i}` }))
      })
      assert.strictEqual(tooMany.status, 400)
      const mixed = yield* post("web", {
        site_id: SITE,
        events: [
          event("ok-1", "v-m"),
          { event_id: "bad-1", name: "x" },
          event("ok-2", "v-m", { timestamp: "yesterday" })
        ]
      })
      assert.strictEqual(mixed.status, 202)
      assert.strictEqual(mixed.body.accepted, 1)
      const rejected = mixed.body.rejected as Array<{ index: number; reason: string }>
      assert.deepStrictEqual(
        rejected.map((r) => r.index),
        [1, 2]
      )
      assert.include(rejected[0]?.reason, "timestamp")
      // A rejection names the field and what was expected, never the value (it may be anything a client sent).
      assert.notInclude(rejected[1]?.reason, "yesterday")
      const secretish = yield* post("web", {
        site_id: SITE,
        events: [event("ok-3", "v-m", { url: 12345678901234, name: { token: "sk_live_do_not_echo" } })]
      })
      const reason = (secretish.body.rejected as Array<{ reason: string }>)[0]?.reason ?? ""
      assert.match(reason, /name|url/)
      assert.notInclude(reason, "sk_live_do_not_echo")
      assert.notInclude(reason, "12345678901234")
    })
  )

  it.effect(
    "a body over the web collector's limit is 413, with and without Content-Length, and nothing is stored",
    () =>
      Effect.gen(function* () {
        const p = yield* port
        const big = JSON.stringify({
          site_id: SITE,
          events: Array.from({ length: 400 }, (_, i) => event(`big-${i}`, "v-big", { props: { pad: "x".repeat(200) } }))
        })
        assert.isAbove(big.length, 65536)
        const declared = yield* rawRequest(
          p,
          `POST /api/analytics/web/collect HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(big)}\r\nConnection: close\r\n\r\n`,
          [big]
        )
        assert.strictEqual(declared.status, 413)
        assert.strictEqual(JSON.parse(declared.body).code, "PAYLOAD_TOO_LARGE")
        const streamed = yield* rawRequest(
          p,
          "POST /api/analytics/web/collect HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
          chunkedBody(200 * 1024)
        )
        assert.strictEqual(streamed.status, 413)
        assert.strictEqual(streamed.headers["access-control-allow-origin"], "*")
        assert.strictEqual(yield* count("analytics_events", "event_id LIKE 'big-%'"), 0)
        // The mobile collector has its own, larger limit.
        const mobile = yield* post("mobile", JSON.parse(big.replace(SITE, "keel-app")))
        assert.strictEqual(mobile.status, 202)
        assert.strictEqual(mobile.body.accepted, 400)
      })
  )

  it.effect("the web collector is open to cross-origin browsers; the mobile one is not", () =>
    Effect.gen(function* () {
      const client = yield* HttpClient.HttpClient
      const preflight = yield* client
        .execute(
          HttpClientRequest.make("OPTIONS")("/api/analytics/web/collect").pipe(
            HttpClientRequest.setHeaders({ origin: "https://blog.example", "access-control-request-method": "POST" })
          )
        )
        .pipe(Effect.scoped)
      assert.strictEqual(preflight.status, 204)
      assert.strictEqual(preflight.headers["access-control-allow-origin"], "*")
      assert.include(preflight.headers["access-control-allow-methods"], "POST")
      const web = yield* post("web", { site_id: SITE, events: [] })
      assert.strictEqual(web.headers["access-control-allow-origin"], "*")
      const mobile = yield* post("mobile", { site_id: "keel-app", events: [] })
      assert.isUndefined(mobile.headers["access-control-allow-origin"])
    })
  )

  // Last: every event the tests above stored is compared (what the collector computes in TypeScript against the
  // SQL it replaced, which migration 0005 still backfills with).
  it.effect("store page and utm_source as SQLite's expressions read them from url and utm", () =>
    Effect.gen(function* () {
      const urls = ["https://keel.dev/pricing?x#y", "https://keel.dev", "/docs#a?b", "docs", "x://"]
      const result = yield* post("web", {
        site_id: SITE,
        events: urls.map((url, i) => event(`derived-${i}`, "v-derived", { url, utm: { source: `s${i}` } }))
      })
      assert.strictEqual(result.body.accepted, urls.length)
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ n: number; differ: number }>`SELECT count(*) AS n,
        sum(CASE WHEN page IS ${sql.literal(pageExpression("url"))}
          AND utm_source IS ${sql.literal(utmSourceExpression("utm"))} THEN 0 ELSE 1 END) AS differ
        FROM analytics_events`
      assert.isAbove(Number(rows[0]!.n), 400)
      assert.strictEqual(Number(rows[0]!.differ), 0)
    })
  )
})
