import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { runCli } from "../support/cli.js"
import { openDataDir } from "../support/data-dir-db.js"
import { HttpTest } from "../support/http.js"
import {
  chiSquareGoodnessOfFit,
  gammaQ,
  normalCdf,
  probabilityToBeat,
  referrerHost,
  twoProportionZTest,
  wilsonInterval
} from "../support/keel.js"
import { registryDir, registryDoc } from "./registry-fixture.js"

const close = (actual: number | null | undefined, expected: number, tolerance = 1e-9, what = "") =>
  assert.isTrue(
    actual !== null && actual !== undefined && Math.abs(actual - expected) <= tolerance,
    `${what}: ${actual} is not within ${tolerance} of ${expected}`
  )

describe("a referrer's host, as top_referrers groups by it", () => {
  it("is the URL parser's host: credentials, ports, IPv6 literals and backslashes read as a browser reads them", () => {
    assert.strictEqual(referrerHost("https://user:pw@www.Evil.com:8080/x"), "evil.com")
    assert.strictEqual(referrerHost("https://token@example.org/"), "example.org")
    assert.strictEqual(referrerHost("https://a.com@b.com/"), "b.com")
    assert.strictEqual(referrerHost("https://[::1]:8080/"), "[::1]")
    assert.strictEqual(referrerHost("https://d.com\\@e.com/"), "d.com")
    assert.strictEqual(referrerHost("android-app://com.google.android.gm/"), "com.google.android.gm")
    assert.strictEqual(referrerHost("news.ycombinator.com/item?id=1"), "news.ycombinator.com")
    assert.strictEqual(referrerHost("localhost:3000/x"), "localhost")
    assert.isNull(referrerHost(""))
    assert.isNull(referrerHost("about:blank"))
    assert.isNull(referrerHost("http://"))
  })
})

describe("readout statistics", () => {
  it("normal distribution function: published table values", () => {
    // Abramowitz & Stegun, Handbook of Mathematical Functions, table 26.1 (Φ(1), Φ(2), Φ(3)), and
    // Φ(1.959963984540054) = 0.975 (the 95 % two-sided quantile).
    close(normalCdf(1), 0.8413447460685429, 1e-13, "Φ(1)")
    close(normalCdf(2), 0.9772498680518208, 1e-13, "Φ(2)")
    close(normalCdf(-3), 0.0013498980316301, 1e-15, "Φ(-3)")
    close(normalCdf(1.959963984540054), 0.975, 1e-13, "Φ(z.975)")
  })

  it("Wilson interval: 12 of 100", () => {
    // Reference: scipy 1.17.1, scipy.stats.binomtest(12, 100).proportion_ci(0.95, method="wilson")
    // = (0.0699940643701949, 0.19812099426711421).
    const ci = wilsonInterval(12, 100)
    close(ci?.low, 0.0699940643701949, 1e-12, "low")
    close(ci?.high, 0.19812099426711421, 1e-12, "high")
    // By hand from the formula with 0 of 10: centre = z²/2n / (1 + z²/n), half the same => low 0.
    const z2 = 1.959963984540054 ** 2
    const zero = wilsonInterval(0, 10)
    close(zero?.low, 0, 1e-15, "low 0/10")
    close(zero?.high, (2 * (z2 / 20)) / (1 + z2 / 10), 1e-12, "high 0/10")
    assert.isNull(wilsonInterval(0, 0))
    // The edges are exact, never a 1e-17 residue of centre − half.
    for (const n of [1, 7, 54, 1000]) {
      assert.strictEqual(wilsonInterval(0, n)?.low, 0, `0 of ${n}`)
      assert.strictEqual(wilsonInterval(n, n)?.high, 1, `${n} of ${n}`)
    }
  })

  it("two-proportion z-test: 200/1000 vs 240/1000", () => {
    // By hand: pooled p = 440/2000 = 0.22, se = √(0.22·0.78·(2/1000)) = 0.018525657882, z = 0.04/se.
    const se = Math.sqrt(0.22 * 0.78 * 0.002)
    const test = twoProportionZTest(200, 1000, 240, 1000)
    close(test?.z, 0.04 / se, 1e-12, "z")
    // Reference: scipy 1.17.1, 2 * scipy.stats.norm.sf(2.1591675854376513) = 0.030837167828904312.
    close(test?.p_value, 0.030837167828904312, 1e-12, "p")
    assert.isNull(twoProportionZTest(0, 10, 0, 10))
  })

  it("probability to beat control: closed forms and a numeric integration", () => {
    // By hand: X_A ~ Beta(1,1) (0 of 0), X_B ~ Beta(2,1) (1 of 1): P(X_B > X_A) = E[X_B] = 2/3.
    close(probabilityToBeat(0, 0, 1, 1), 2 / 3, 1e-12, "2/3")
    // X_A ~ Beta(1,2) (0 of 1), X_B ~ Beta(2,1) (1 of 1): ∫ 2x·(1 − (1 − x)²) dx = 4/3 − 1/2 = 5/6.
    close(probabilityToBeat(0, 1, 1, 1), 5 / 6, 1e-12, "5/6")
    close(probabilityToBeat(1, 1, 0, 1), 1 / 6, 1e-12, "1/6 (swapped)")
    close(probabilityToBeat(30, 100, 30, 100), 0.5, 1e-9, "equal counts")
    // Reference: scipy 1.17.1, integrate.quad(beta.pdf(x, 241, 761) * beta.cdf(x, 201, 801), 0, 1)
    // = 0.9845373460239734 (error estimate 2.4e-13).
    close(probabilityToBeat(200, 1000, 240, 1000), 0.9845373460239734, 1e-10, "200/1000 vs 240/1000")
  })

  it("sample ratio mismatch: chi-square goodness of fit", () => {
    // By hand: 5100 vs 4900 against 50/50: χ² = (100² + 100²)/5000 = 4, df 1.
    // Reference: scipy 1.17.1, scipy.stats.chisquare([5100, 4900], [5000, 5000]).pvalue = 0.04550026389635857.
    const two = chiSquareGoodnessOfFit([5100, 4900], [0.5, 0.5])
    close(two?.chi_square, 4, 1e-12, "χ²")
    close(two?.p_value, 0.04550026389635857, 1e-12, "p")
    // Reference: scipy.stats.chisquare([300, 330, 370], [340, 330, 330]) = (9.554367201426025, 0.00841967878325261).
    const three = chiSquareGoodnessOfFit([300, 330, 370], [0.34, 0.33, 0.33])
    close(three?.chi_square, 9.554367201426025, 1e-9, "χ² 3")
    assert.strictEqual(three?.df, 2)
    close(three?.p_value, 0.00841967878325261, 1e-12, "p 3")
    // Published critical values (any χ² table): 3.841458820694124 at df 1 and 5.991464547107979 at df 2 are p = 0.05.
    close(gammaQ(1 / 2, 3.841458820694124 / 2), 0.05, 1e-12, "df 1 critical value")
    close(gammaQ(2 / 2, 5.991464547107979 / 2), 0.05, 1e-12, "df 2 critical value")
    assert.isNull(chiSquareGoodnessOfFit([0, 0], [1, 1]))
    assert.isNull(chiSquareGoodnessOfFit([10], [1]))
  })
})

const TOKEN = "adm_readout_test_0123456789"
const T0 = Date.UTC(2026, 0, 10, 12)
const fixture = registryDir()

const get = (url: string, token: string | null = TOKEN, scheme = "Bearer") =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const request = HttpClientRequest.get(url).pipe(
      token === null ? (r) => r : HttpClientRequest.setHeader("authorization", `${scheme} ${token}`)
    )
    const response = yield* client.execute(request)
    return {
      status: response.status,
      contentType: response.headers["content-type"] ?? "",
      body: (yield* response.json) as Record<string, any>
    }
  }).pipe(Effect.scoped)

/** 1000 control subjects (200 convert) and 1000 bold subjects (240 convert), exposed at T0. */
const seedExperiment = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const exposures = []
  const events = []
  for (const [variant, converting] of [
    ["control", 200],
    ["bold", 240]
  ] as const) {
    for (let i = 0; i < 1000; i++) {
      const subject = `${variant}-${i}`
      exposures.push({
        experiment_id: "onboarding-copy",
        subject,
        variant,
        first_exposed_at: T0 + i,
        last_exposed_at: T0 + i,
        exposures: 2
      })
      const at = i < converting ? T0 + i + 60_000 : i < converting + 50 ? T0 - 60_000 : undefined
      if (at !== undefined) {
        // converting subjects signed up after exposure (twice: still one conversion); the next 50 before it.
        for (const n of i < converting ? [0, 1] : [0]) {
          events.push({
            site_id: "keel-app",
            event_id: `${subject}-signup-${n}`,
            collector: "mobile",
            name: "signup",
            occurred_at: at + n,
            visitor_id: subject,
            received_at: at
          })
        }
      }
    }
  }
  yield* sql`INSERT INTO experiment_exposures ${sql.insert(exposures)}`
  for (let i = 0; i < events.length; i += 200)
    yield* sql`INSERT INTO analytics_events ${sql.insert(events.slice(i, i + 200))}`
})

const collect = (body: unknown) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(
      HttpClientRequest.post("/api/analytics/web/collect").pipe(HttpClientRequest.bodyUnsafeJson(body))
    )
    return response.status
  }).pipe(Effect.scoped)

const DAY1 = Date.UTC(2026, 0, 1)
const pageview = (id: string, visitor: string, at: number, extra: Record<string, unknown> = {}) => ({
  event_id: id,
  name: "pageview",
  timestamp: at,
  visitor_id: visitor,
  ...extra
})

layer(
  HttpTest({
    settings: { dataDir: fixture.dir },
    env: { KEEL_ADMIN_TOKENS: ` other_token_abcdefgh , ${TOKEN}`, KEEL_COLLECT_SITES: "keel-docs" }
  }),
  { timeout: "60 seconds" }
)("readout over HTTP", (it) => {
  it.effect("GET /api/experiments/{id}/results: counts and statistics per variant", () =>
    Effect.gen(function* () {
      yield* seedExperiment
      const { body, status } = yield* get(
        "/api/experiments/onboarding-copy/results?metric=signup&from=2026-01-10&to=2026-01-10"
      )
      assert.strictEqual(status, 200)
      assert.strictEqual(body.control, "control")
      assert.strictEqual(body.from, "2026-01-10T00:00:00.000Z")
      assert.strictEqual(body.to, "2026-01-11T00:00:00.000Z", "a date as `to` means the end of that day")
      // The end of 9999-12-31 is in year 10000: the window ends at the last instant an event may carry.
      const far = yield* get("/api/experiments/onboarding-copy/results?metric=signup&from=2026-01-10&to=9999-12-31")
      assert.strictEqual(far.status, 200)
      assert.strictEqual(far.body.to, "9999-12-31T23:59:59.999Z")
      const [control, bold] = body.variants
      assert.deepInclude(control, {
        name: "control",
        is_control: true,
        subjects: 1000,
        exposures: 2000,
        conversions: 200
      })
      assert.deepInclude(bold, { name: "bold", is_control: false, subjects: 1000, exposures: 2000, conversions: 240 })
      close(control.conversion_rate, 0.2, 1e-15, "control rate")
      assert.isNull(control.lift)
      assert.isNull(control.p_value)
      assert.isNull(control.probability_to_beat_control)
      close(bold.lift, 0.2, 1e-12, "lift (0.24 − 0.2) / 0.2")
      close(bold.p_value, 0.030837167828904312, 1e-12, "z-test p (scipy, see above)")
      close(bold.probability_to_beat_control, 0.9845373460239734, 1e-10, "P(beat) (scipy quad, see above)")
      const ci = wilsonInterval(240, 1000)
      close(bold.conversion_rate_ci.low, ci?.low ?? Number.NaN, 1e-15, "ci")
      assert.deepStrictEqual(body.srm, { chi_square: 0, df: 1, p_value: 1, mismatch: false })
      assert.strictEqual(body.unlisted_subjects, 0)

      const later = yield* get("/api/experiments/onboarding-copy/results?metric=signup&from=2026-01-11&to=2026-01-12")
      assert.strictEqual(later.status, 200)
      assert.strictEqual(later.body.variants[0].subjects, 0)
      assert.isNull(later.body.variants[0].conversion_rate)
      assert.isNull(later.body.srm)
    })
  )

  it.effect("GET /api/analytics/summary: visitors, pageviews, series, top pages, referrers, UTM sources", () =>
    Effect.gen(function* () {
      const status = yield* collect({
        site_id: "keel-docs",
        events: [
          pageview("s-1", "v-1", DAY1 + 1000, {
            url: "https://keel.dev/pricing?plan=team",
            referrer: "https://www.news.ycombinator.com/item?id=1",
            utm: { source: "hn" }
          }),
          pageview("s-2", "v-1", DAY1 + 2000, { url: "https://keel.dev/docs#intro" }),
          pageview("s-3", "v-2", DAY1 + 3000, { url: "https://keel.dev/pricing", referrer: "https://google.com/" }),
          { ...pageview("s-4", "v-2", DAY1 + 4000), name: "signup" },
          pageview("s-5", "v-3", DAY1 + 86_400_000 + 5000, {
            url: "https://keel.dev/pricing",
            referrer: "https://news.ycombinator.com/",
            utm: { source: "hn", medium: "social" }
          }),
          pageview("s-6", "v-9", DAY1 + 2 * 86_400_000, { url: "https://keel.dev/later" })
        ]
      })
      assert.strictEqual(status, 202)
      const { body } = yield* get("/api/analytics/summary?site=keel-docs&from=2026-01-01&to=2026-01-02")
      assert.deepStrictEqual(body.totals, { visitors: 3, pageviews: 4, events: 5 })
      assert.deepStrictEqual(body.series, [
        { start: "2026-01-01T00:00:00.000Z", visitors: 2, pageviews: 3, events: 4 },
        { start: "2026-01-02T00:00:00.000Z", visitors: 1, pageviews: 1, events: 1 }
      ])
      assert.deepStrictEqual(body.top_pages, [
        { page: "/pricing", pageviews: 3, visitors: 3 },
        { page: "/docs", pageviews: 1, visitors: 1 }
      ])
      assert.deepStrictEqual(body.top_referrers, [
        { referrer: "news.ycombinator.com", visitors: 2, pageviews: 2 },
        { referrer: "google.com", visitors: 1, pageviews: 1 }
      ])
      assert.deepStrictEqual(body.top_utm_sources, [{ utm_source: "hn", visitors: 2, pageviews: 2 }])
      const hourly = yield* get(
        "/api/analytics/summary?site=keel-docs&from=2026-01-01&to=2026-01-02&interval=hour&limit=1"
      )
      assert.strictEqual(hourly.body.series.length, 48)
      assert.deepStrictEqual(hourly.body.series[0], {
        start: "2026-01-01T00:00:00.000Z",
        visitors: 2,
        pageviews: 3,
        events: 4
      })
      assert.strictEqual(hourly.body.top_pages.length, 1)
      const empty = yield* get("/api/analytics/summary?site=nobody&from=2026-01-01T00:00:00Z&to=2026-01-01T00:00:00Z")
      assert.deepStrictEqual(empty.body.totals, { visitors: 0, pageviews: 0, events: 0 })
      assert.deepStrictEqual(empty.body.series, [])
    })
  )

  it.effect("bad input is a 400 or 404 problem, never a 500", () =>
    Effect.gen(function* () {
      const cases: Array<[string, number, string]> = [
        ["/api/experiments/nope/results?metric=signup", 404, "EXPERIMENT_NOT_FOUND"],
        ["/api/experiments/onboarding-copy/results?metric=no-such-event", 400, "UNKNOWN_METRIC"],
        ["/api/experiments/onboarding-copy/results", 400, "VALIDATION_FAILED"],
        ["/api/experiments/onboarding-copy/results?metric=signup&from=yesterday", 400, "INVALID_DATE"],
        ["/api/experiments/onboarding-copy/results?metric=signup&to=2026-02-30", 400, "INVALID_DATE"],
        ["/api/experiments/onboarding-copy/results?metric=signup&from=2026-01-01T10:00:00", 400, "INVALID_DATE"],
        ["/api/experiments/onboarding-copy/results?metric=signup&from=2026-02-01&to=2026-01-01", 400, "INVALID_RANGE"],
        ["/api/analytics/summary?site=keel-docs&from=2026-03-01&to=2026-01-01", 400, "INVALID_RANGE"],
        ["/api/analytics/summary?site=keel-docs&interval=week", 400, "INVALID_INTERVAL"],
        ["/api/analytics/summary?site=keel-docs&from=2020-01-01&to=2026-01-01&interval=hour", 400, "INVALID_RANGE"],
        ["/api/analytics/summary?site=keel-docs&limit=0", 400, "INVALID_LIMIT"],
        ["/api/analytics/summary?site=keel-docs&limit=many", 400, "VALIDATION_FAILED"],
        ["/api/analytics/summary", 400, "VALIDATION_FAILED"]
      ]
      for (const [url, status, code] of cases) {
        const answer = yield* get(url)
        assert.strictEqual(answer.status, status, url)
        assert.strictEqual(answer.body.code, code, url)
        assert.isTrue(answer.contentType.startsWith("application/problem+json"), url)
        assert.isString(answer.body.detail)
      }
    })
  )

  it.effect("an admin token is required, compared exactly; the Bearer scheme in any case", () =>
    Effect.gen(function* () {
      const url = "/api/analytics/summary?site=keel-docs"
      const none = yield* get(url, null)
      assert.strictEqual(none.status, 401)
      assert.strictEqual(none.body.code, "ADMIN_TOKEN_REQUIRED")
      assert.include(none.body.detail, "Authorization: Bearer")
      for (const wrong of [`${TOKEN}x`, TOKEN.slice(0, -1), "other_token_abcdefg"]) {
        const answer = yield* get(url, wrong)
        assert.strictEqual(answer.status, 401)
        assert.strictEqual(answer.body.code, "ADMIN_TOKEN_INVALID")
      }
      assert.strictEqual((yield* get(url, TOKEN, "bearer")).status, 200)
      assert.strictEqual((yield* get(url, "other_token_abcdefgh")).status, 200)
      const results = yield* get("/api/experiments/onboarding-copy/results?metric=signup", null)
      assert.strictEqual(results.status, 401)
    })
  )

  it.effect("the OpenAPI document shows both endpoints with their security and errors", () =>
    Effect.gen(function* () {
      const { body } = yield* get("/docs/product/openapi.json", null)
      const results = body.paths["/api/experiments/{id}/results"].get
      const summary = body.paths["/api/analytics/summary"].get
      for (const op of [results, summary]) {
        assert.deepStrictEqual(op.security, [{ adminToken: [] }])
        assert.includeMembers(Object.keys(op.responses), ["200", "400", "401"])
      }
      assert.include(Object.keys(results.responses), "404")
      assert.strictEqual(body.components.securitySchemes.adminToken.scheme, "bearer")
      // The public assignment stays without it.
      assert.isUndefined(body.paths["/api/experiments/assign"].get.security?.[0]?.adminToken)
    })
  )
})

layer(HttpTest({ settings: { dataDir: fixture.dir } }), { timeout: "60 seconds" })(
  "readout without KEEL_ADMIN_TOKENS",
  (it) => {
    it.effect("answers 401 ADMIN_TOKENS_NOT_CONFIGURED, whatever is sent", () =>
      Effect.gen(function* () {
        for (const token of [null, TOKEN]) {
          const answer = yield* get("/api/analytics/summary?site=keel-docs", token)
          assert.strictEqual(answer.status, 401)
          assert.strictEqual(answer.body.code, "ADMIN_TOKENS_NOT_CONFIGURED")
          assert.include(answer.body.detail, "KEEL_ADMIN_TOKENS")
        }
      })
    )
  }
)

/** A data dir whose database the first `ctl` run created and migrated, and that database, open. */
const migratedDataDir = (doc?: unknown) =>
  Effect.gen(function* () {
    const dir = (doc === undefined ? registryDir() : registryDir(doc)).dir
    const env = { KEEL_DATA_DIR: dir, KEEL_DEMO_DATA: "false" }
    const first = yield* runCli(["product", "summary", "--site", "keel-docs", "--json"], env)
    assert.strictEqual(first.exitCode, 0, first.stderr)
    return { dir, env, db: yield* Effect.promise(() => openDataDir(dir)) }
  })

describe("ctl product", () => {
  it.live(
    "results and summary read the data dir's database through the same service, with --json",
    () =>
      Effect.gen(function* () {
        const { env, db } = yield* migratedDataDir()
        const exposure = (...params: ReadonlyArray<string | number>) =>
          db.run("INSERT INTO experiment_exposures VALUES ('onboarding-copy', ?, ?, ?, ?, 1)", params)
        const event = (...params: ReadonlyArray<string | number>) =>
          db.run(
            `INSERT INTO analytics_events (site_id, event_id, collector, name, occurred_at, visitor_id, url, page, received_at)
             VALUES ('keel-docs', ?, 'web', ?, ?, ?, 'https://keel.dev/a', '/a', 0)`,
            params
          )
        yield* Effect.promise(async () => {
          for (let i = 0; i < 10; i++) {
            await exposure(`c-${i}`, "control", T0, T0)
            await exposure(`b-${i}`, "bold", T0, T0)
            if (i < 2) await event(`c-${i}`, "signup", T0 + 1, `c-${i}`)
            if (i < 5) await event(`b-${i}`, "signup", T0 + 1, `b-${i}`)
            await event(`pv-${i}`, "pageview", T0, `b-${i}`)
          }
          await db.close()
        })

        const results = yield* runCli(
          ["product", "results", "onboarding-copy", "--metric", "signup", "--from", "2026-01-10", "--json"],
          env
        )
        assert.strictEqual(results.exitCode, 0, results.stderr)
        const report = JSON.parse(results.stdout)
        assert.deepStrictEqual(
          report.variants.map((v: any) => [v.name, v.subjects, v.conversions]),
          [
            ["control", 10, 2],
            ["bold", 10, 5]
          ]
        )
        close(report.variants[1].lift, 1.5, 1e-12, "lift (0.5 − 0.2) / 0.2")
        const text = yield* runCli(["product", "results", "onboarding-copy", "--metric", "signup"], env)
        assert.strictEqual(text.exitCode, 0, text.stderr)
        assert.include(text.stdout, "P(beat control)")
        assert.include(text.stdout, "sample ratio: chi-square")

        const summary = yield* runCli(
          ["product", "summary", "--site", "keel-docs", "--from", "2026-01-10", "--to", "2026-01-10", "--json"],
          env
        )
        assert.strictEqual(summary.exitCode, 0, summary.stderr)
        const s = JSON.parse(summary.stdout)
        assert.deepStrictEqual(s.totals, { visitors: 12, pageviews: 10, events: 17 })
        assert.deepStrictEqual(s.top_pages, [{ page: "/a", pageviews: 10, visitors: 10 }])

        const unknown = yield* runCli(["product", "results", "nope", "--metric", "signup", "--json"], env)
        assert.strictEqual(unknown.exitCode, 1)
        assert.strictEqual(JSON.parse(unknown.stdout).error.code, "EXPERIMENT_NOT_FOUND")
        // With no valid registry loaded at all, the refusal says so rather than blaming the experiment id.
        const refusedRegistry = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-readout-reg-")), "r.yml")
        fs.writeFileSync(refusedRegistry, "apps: [ {")
        const noRegistry = yield* runCli(["product", "results", "onboarding-copy", "--metric", "signup", "--json"], {
          ...env,
          KEEL_PRODUCT_REGISTRY: refusedRegistry
        })
        assert.strictEqual(noRegistry.exitCode, 1)
        assert.include(JSON.parse(noRegistry.stdout).error.detail, "no valid product registry is loaded")
        const badDate = yield* runCli(["product", "summary", "--site", "keel-docs", "--from", "soon", "--json"], env)
        assert.strictEqual(badDate.exitCode, 1)
        assert.strictEqual(JSON.parse(badDate.stdout).error.code, "INVALID_DATE")
        const badInterval = yield* runCli(["product", "summary", "--site", "keel-docs", "--interval", "week"], env)
        assert.strictEqual(badInterval.exitCode, 2)
      }),
    60_000
  )

  it.live(
    "srm is over the variants that still take traffic: a variant weighted 0 keeps its old subjects out of it",
    () =>
      Effect.gen(function* () {
        const doc = registryDoc()
        const variants = doc.apps[0]!.journeys[0]!.experiment!.variants as Array<Record<string, unknown>>
        variants.push({ name: "retired", weight: 0, config: { headline: "Old" } })
        const { env, db } = yield* migratedDataDir(doc)
        yield* Effect.promise(async () => {
          for (let i = 0; i < 10; i++)
            for (const [prefix, variant] of [
              ["c", "control"],
              ["b", "bold"],
              ["r", "retired"]
            ])
              await db.run("INSERT INTO experiment_exposures VALUES ('onboarding-copy', ?, ?, ?, ?, 1)", [
                `${prefix}-${i}`,
                variant!,
                T0,
                T0
              ])
          await db.run(
            `INSERT INTO analytics_events (site_id, event_id, collector, name, occurred_at, visitor_id, received_at)
             VALUES ('keel-docs', 's-1', 'web', 'signup', ?, 'c-1', 0)`,
            [T0 + 1]
          )
          await db.close()
        })
        const results = yield* runCli(
          ["product", "results", "onboarding-copy", "--metric", "signup", "--from", "2026-01-10", "--json"],
          env
        )
        assert.strictEqual(results.exitCode, 0, results.stderr)
        const report = JSON.parse(results.stdout)
        assert.deepStrictEqual(
          report.variants.map((v: { name: string; subjects: number }) => [v.name, v.subjects]),
          [
            ["control", 10],
            ["bold", 10],
            ["retired", 10]
          ]
        )
        assert.deepStrictEqual(report.srm, { chi_square: 0, df: 1, p_value: 1, mismatch: false })
      }),
    60_000
  )

  it.live(
    "migration 0006 recomputes the referrer hosts 0005's SQL had read wrongly (credentials, IPv6)",
    () =>
      Effect.gen(function* () {
        const { env, db } = yield* migratedDataDir()
        const event = (...params: ReadonlyArray<string | number>) =>
          db.run(
            `INSERT INTO analytics_events (site_id, event_id, collector, name, occurred_at, visitor_id, referrer, referrer_host, received_at)
             VALUES ('keel-docs', ?, 'web', 'pageview', ?, ?, ?, ?, 0)`,
            params
          )
        yield* Effect.promise(async () => {
          // As 0005 stored them, before 0006.
          await event("e-1", T0, "v-1", "https://user:pw@www.evil.com:8080/x", "user")
          await event("e-2", T0, "v-2", "https://[::1]:8080/", "[")
          await event("e-3", T0, "v-3", "https://evil.com/", "evil.com")
          await db.run("DELETE FROM keel_migrations_product WHERE name = 'analytics_referrer_host_parsed'")
          await db.close()
        })

        const summary = yield* runCli(
          ["product", "summary", "--site", "keel-docs", "--from", "2026-01-10", "--to", "2026-01-10", "--json"],
          env
        )
        assert.strictEqual(summary.exitCode, 0, summary.stderr)
        assert.deepStrictEqual(JSON.parse(summary.stdout).top_referrers, [
          { referrer: "evil.com", visitors: 2, pageviews: 2 },
          { referrer: "[::1]", visitors: 1, pageviews: 1 }
        ])
      }),
    60_000
  )
})
