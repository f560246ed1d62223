import { HttpClient, HttpClientRequest } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { HttpTest } from "../support/http.js"
import { CLIENT_KEY, registryDir } from "./registry-fixture.js"

const fixture = registryDir()

const get = (path: string, headers: Record<string, string> = { "x-client-key": CLIENT_KEY }) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(HttpClientRequest.get(path).pipe(HttpClientRequest.setHeaders(headers)))
    const text = yield* response.text
    return { status: response.status, headers: response.headers, body: text === "" ? null : JSON.parse(text) }
  }).pipe(Effect.scoped)

const postEvents = (body: unknown, key = CLIENT_KEY) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(
      HttpClientRequest.post("/api/onboarding/events").pipe(
        HttpClientRequest.setHeader("x-client-key", key),
        HttpClientRequest.bodyUnsafeJson(body)
      )
    )
    return { status: response.status, body: (yield* response.json) as Record<string, unknown> }
  }).pipe(Effect.scoped)

layer(HttpTest({ settings: { dataDir: fixture.dir } }), { timeout: "60 seconds" })("onboarding", (it) => {
  it.effect("the bundle holds, per journey of the platform, exactly what /assign answers", () =>
    Effect.gen(function* () {
      const bundle = yield* get("/api/onboarding/bundle?app_id=demo-ios&platform=ios&subject=fresh-install-1")
      assert.strictEqual(bundle.status, 200)
      assert.strictEqual(bundle.body.app_id, "demo-ios")
      assert.strictEqual(bundle.body.platform, "ios")
      assert.isFalse(Number.isNaN(Date.parse(bundle.body.generated_at)))
      assert.deepStrictEqual(Object.keys(bundle.body.assignments).sort(), ["onboarding", "paywall"])
      for (const surface of ["onboarding", "paywall"]) {
        const single = yield* get(
          `/api/experiments/assign?app_id=demo-ios&platform=ios&surface=${surface}&subject=fresh-install-1`
        )
        assert.deepStrictEqual(bundle.body.assignments[surface], single.body)
      }
    })
  )

  it.effect("carries an ETag; If-None-Match with it answers 304 without a body", () =>
    Effect.gen(function* () {
      const path = "/api/onboarding/bundle?app_id=demo-ios&platform=ios&subject=etag-1"
      const first = yield* get(path)
      const etag = first.headers.etag
      assert.match(etag ?? "", /^W\/".+"$/)
      const again = yield* get(path, { "x-client-key": CLIENT_KEY, "if-none-match": etag ?? "" })
      assert.strictEqual(again.status, 304)
      assert.isNull(again.body)
      // The 304 carries the 200's caching rule, so a cache keeps revalidating.
      assert.strictEqual(again.headers["cache-control"], "private, no-cache")
      const any = yield* get(path, { "x-client-key": CLIENT_KEY, "if-none-match": "*" })
      assert.strictEqual(any.status, 304)
      const other = yield* get("/api/onboarding/bundle?app_id=demo-ios&platform=ios&subject=etag-2")
      assert.strictEqual(other.status, 200)
    })
  )

  it.effect("the bundle needs the app's client key", () =>
    Effect.gen(function* () {
      const denied = yield* get("/api/onboarding/bundle?app_id=demo-ios&platform=ios&subject=x", {})
      assert.strictEqual(denied.status, 401)
      assert.strictEqual(denied.body.code, "INVALID_CLIENT_KEY")
    })
  )

  it.effect("step events are stored once per event id and answered 202", () =>
    Effect.gen(function* () {
      const events = [
        { event_id: "ob-1", subject: "fresh-install-1", step: "welcome", timestamp: 1_790_000_000_000 },
        { event_id: "ob-2", subject: "fresh-install-1", step: "permissions", timestamp: "2026-11-23T10:00:00Z" },
        { event_id: "ob-3", subject: "fresh-install-1" }
      ]
      const first = yield* postEvents({ app_id: "demo-ios", events })
      assert.strictEqual(first.status, 202)
      assert.strictEqual(first.body.accepted, 2)
      assert.strictEqual((first.body.rejected as Array<{ index: number }>)[0]?.index, 2)
      // The rejection names the field, never a value the client sent.
      const wrong = yield* postEvents({
        app_id: "demo-ios",
        events: [{ event_id: "ob-9", subject: "pw_hunter2_secret", step: 42, timestamp: "not-a-date" }]
      })
      const reason = (wrong.body.rejected as Array<{ reason: string }>)[0]?.reason ?? ""
      assert.match(reason, /step/)
      assert.notInclude(reason, "42")
      assert.notInclude(reason, "not-a-date")
      const replay = yield* postEvents({ app_id: "demo-ios", events })
      assert.deepStrictEqual(
        { accepted: replay.body.accepted, duplicates: replay.body.duplicates },
        { accepted: 0, duplicates: 2 }
      )
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ n: number }>`SELECT count(*) AS n FROM onboarding_events WHERE app_id = 'demo-ios'`
      assert.strictEqual(rows[0]?.n, 2)
      assert.strictEqual((yield* postEvents({ app_id: "demo-ios", events }, "pk_wrong_key_000")).status, 401)
      // The subject /assign takes is an event's subject too: 256 characters counted as code points.
      const emoji = yield* postEvents({
        app_id: "demo-ios",
        events: [
          { event_id: "ob-emoji-1", subject: "😀".repeat(200), step: "welcome", timestamp: 1_790_000_000_000 },
          { event_id: "ob-emoji-2", subject: "😀".repeat(257), step: "welcome", timestamp: 1_790_000_000_000 }
        ]
      })
      assert.strictEqual(emoji.body.accepted, 1)
      assert.strictEqual((emoji.body.rejected as Array<{ index: number }>)[0]?.index, 1)
    })
  )

  it.effect("a timestamp string that is not a date rejects its event (it was a 500)", () =>
    Effect.gen(function* () {
      // Neither a date nor an RFC 3339 date-time with its zone: what Date.parse would still have read included.
      const looseForms = [
        "March 7, 2026",
        "1",
        "2026",
        "Tue, 01 Dec 2026 10:00:00 GMT",
        "2026-02-30T00:00:00Z",
        "2026-11-27T10:00:00",
        "2026-11-27"
      ]
      const events = ["yesterday", "\ud800", "2026-13-45T99:00:00Z", ...looseForms].map((timestamp, i) => ({
        event_id: `bad-date-${i}`,
        subject: "fresh-install-2",
        step: "welcome",
        timestamp
      }))
      const answer = yield* postEvents({ app_id: "demo-ios", events })
      assert.strictEqual(answer.status, 202)
      assert.strictEqual(answer.body.accepted, 0)
      assert.deepStrictEqual(
        (answer.body.rejected as Array<{ index: number }>).map((r) => r.index),
        events.map((_, i) => i)
      )
    })
  )
})
