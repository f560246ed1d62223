import { HttpClient, HttpClientRequest } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { HttpTest } from "../support/http.js"
import { buckets, chooseVariant, hashV2, JourneyRegistry } from "../support/keel.js"
import { CLIENT_KEY, registryDir, registryDoc } from "./registry-fixture.js"

describe("bucketing hash", () => {
  it("matches GrowthBook's v2 public test vectors", () => {
    const vectors: Array<[string, string, number]> = [
      ["seed", "a", 0.0505],
      ["seed", "b", 0.2696],
      ["foo", "ab", 0.2575],
      ["foo", "def", 0.2019],
      ["89123klj", "8952klfjas09ujkasdf", 0.124],
      ["90850943850283058242805", "123", 0.7516],
      ["()**(%$##$%#$#", '___)((*":&', 0.0128]
    ]
    for (const [seed, value, expected] of vectors) assert.strictEqual(hashV2(seed, value), expected)
  })

  it("hashes UTF-16 code units of the NFC form: composed and decomposed subjects land together", () => {
    const composed = "jos\u00e9-\u6771\u4eac-\u{1F600}"
    const decomposed = "jose\u0301-\u6771\u4eac-\u{1F600}"
    assert.deepStrictEqual(buckets("exp", composed), buckets("exp", decomposed))
    const b = buckets("exp", composed)
    assert.isTrue(b.traffic >= 0 && b.traffic < 1 && b.variant >= 0 && b.variant < 1)
    assert.notStrictEqual(b.traffic, b.variant)
  })

  it("chooses by cumulative weight ranges", () => {
    const variants = [
      { name: "a", weight: 0.2 },
      { name: "b", weight: 0.3 },
      { name: "c", weight: 0.5 }
    ]
    assert.strictEqual(chooseVariant(variants, 0)?.name, "a")
    assert.strictEqual(chooseVariant(variants, 0.1999)?.name, "a")
    assert.strictEqual(chooseVariant(variants, 0.2)?.name, "b")
    assert.strictEqual(chooseVariant(variants, 0.5)?.name, "c")
    assert.strictEqual(chooseVariant(variants, 0.9999)?.name, "c")
  })
})

const assign = (params: Record<string, string>, key: string | null = CLIENT_KEY) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const request = HttpClientRequest.get("/api/experiments/assign").pipe(
      HttpClientRequest.setUrlParams(params),
      key === null ? (r) => r : HttpClientRequest.setHeader("x-client-key", key)
    )
    const response = yield* client.execute(request)
    return { status: response.status, body: (yield* response.json) as Record<string, unknown> }
  }).pipe(Effect.scoped)

const params = (subject: string, surface = "onboarding", platform = "ios") => ({
  app_id: "demo-ios",
  platform,
  surface,
  subject
})

const EMPTY = { variant: null, config: {}, experimentId: null }

const exposureOf = (subject: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ variant: string; exposures: number }>`
      SELECT variant, exposures FROM experiment_exposures WHERE experiment_id = 'onboarding-copy' AND subject = ${subject}`
    return rows[0]
  })

const fixture = registryDir()

layer(HttpTest({ settings: { dataDir: fixture.dir } }), { timeout: "60 seconds" })(
  "GET /api/experiments/assign",
  (it) => {
    it.effect("answers a variant with its public config and the experiment id", () =>
      Effect.gen(function* () {
        const { body, status } = yield* assign(params("user-1"))
        assert.strictEqual(status, 200)
        assert.strictEqual(body.experimentId, "onboarding-copy")
        assert.include(["control", "bold"], body.variant)
        const expected = body.variant === "control" ? { headline: "Welcome" } : { headline: "Let's go", cta: "Start" }
        assert.deepStrictEqual(body.config, expected)
        assert.deepStrictEqual(Object.keys(body).sort(), ["config", "experimentId", "variant"])
      })
    )

    it.effect("is sticky, and records one exposure row per subject with a count", () =>
      Effect.gen(function* () {
        const first = yield* assign(params("sticky-1"))
        for (let i = 0; i < 4; i++) assert.deepStrictEqual((yield* assign(params("sticky-1"))).body, first.body)
        const exposure = yield* exposureOf("sticky-1")
        assert.strictEqual(exposure?.variant, first.body.variant)
        assert.strictEqual(exposure?.exposures, 5)
      })
    )

    it.effect("the stored assignment wins after weights change; new subjects follow the new weights", () =>
      Effect.gen(function* () {
        const registry = yield* JourneyRegistry
        const subjects = Array.from({ length: 20 }, (_, i) => `weights-${i}`)
        const before = new Map<string, unknown>()
        for (const s of subjects) before.set(s, (yield* assign(params(s))).body.variant)
        fixture.write(registryDoc({ weights: [0, 1] }))
        assert.strictEqual((yield* registry.reload)._tag, "Loaded")
        for (const s of subjects) assert.strictEqual((yield* assign(params(s))).body.variant, before.get(s))
        for (let i = 0; i < 10; i++) assert.strictEqual((yield* assign(params(`new-${i}`))).body.variant, "bold")
        fixture.write(registryDoc())
        yield* registry.reload
      })
    )

    it.effect("a non-ASCII subject is assigned and sticky", () =>
      Effect.gen(function* () {
        const subject = "usuário-東京-😀"
        const first = yield* assign(params(subject))
        assert.strictEqual(first.status, 200)
        assert.isNotNull(first.body.variant)
        assert.deepStrictEqual((yield* assign(params(subject))).body, first.body)
        // 256 characters are counted as code points: 256 emoji (512 UTF-16 units) are one subject, 257 too many.
        assert.strictEqual((yield* assign(params("😀".repeat(256)))).status, 200)
        assert.strictEqual((yield* assign(params("😀".repeat(257)))).status, 400)
        assert.strictEqual((yield* assign(params("s".repeat(257)))).status, 400)
      })
    )

    it.effect("the kill switch wins over a stored assignment and records no exposure", () =>
      Effect.gen(function* () {
        const registry = yield* JourneyRegistry
        yield* assign(params("killed-1"))
        const before = yield* exposureOf("killed-1")
        fixture.write(registryDoc({ kill: true }))
        yield* registry.reload
        assert.deepStrictEqual((yield* assign(params("killed-1"))).body, EMPTY)
        assert.deepStrictEqual((yield* assign(params("killed-new"))).body, EMPTY)
        assert.deepStrictEqual(yield* exposureOf("killed-1"), before)
        assert.isUndefined(yield* exposureOf("killed-new"))
        fixture.write(registryDoc())
        yield* registry.reload
      })
    )

    it.effect("paused or stopped experiments, zero traffic and journeys without one answer the empty assignment", () =>
      Effect.gen(function* () {
        const registry = yield* JourneyRegistry
        for (const doc of [
          registryDoc({ status: "paused" }),
          registryDoc({ status: "stopped" }),
          registryDoc({ traffic: 0 })
        ]) {
          fixture.write(doc)
          yield* registry.reload
          assert.deepStrictEqual((yield* assign(params("outside-1"))).body, EMPTY)
        }
        assert.isUndefined(yield* exposureOf("outside-1"))
        fixture.write(registryDoc())
        yield* registry.reload
        assert.deepStrictEqual((yield* assign(params("outside-1", "paywall"))).body, EMPTY)
        assert.deepStrictEqual((yield* assign(params("outside-1", "no-such-surface"))).body, EMPTY)
        assert.strictEqual((yield* assign(params("outside-1", "onboarding", "android"))).body.variant, "only")
      })
    )

    it.effect("traffic decides membership with its own salt: about the configured share gets in", () =>
      Effect.gen(function* () {
        const registry = yield* JourneyRegistry
        fixture.write(registryDoc({ traffic: 0.3 }))
        yield* registry.reload
        let inside = 0
        for (let i = 0; i < 300; i++) if ((yield* assign(params(`traffic-${i}`))).body.variant !== null) inside++
        assert.isTrue(inside > 60 && inside < 120, `${inside} of 300 inside for traffic 0.3`)
        fixture.write(registryDoc())
        yield* registry.reload
      })
    )

    it.effect("client keys, apps and parameters are checked: 401, 404, 400 in the problem shape", () =>
      Effect.gen(function* () {
        const missing = yield* assign(params("k-1"), null)
        assert.strictEqual(missing.status, 401)
        assert.strictEqual(missing.body.code, "INVALID_CLIENT_KEY")
        const wrong = yield* assign(params("k-1"), "pk_someone_elses_key")
        assert.strictEqual(wrong.status, 401)
        assert.strictEqual((yield* assign(params("k-1"), "pk_test_ios_rotated_key")).status, 200)
        const unknown = yield* assign({ ...params("k-1"), app_id: "nope" })
        assert.strictEqual(unknown.status, 404)
        assert.strictEqual(unknown.body.code, "APP_NOT_FOUND")
        const empty = yield* assign({ ...params("k-1"), subject: "" })
        assert.strictEqual(empty.status, 400)
        assert.strictEqual(empty.body.code, "VALIDATION_FAILED")
        const { subject: _, ...withoutSubject } = params("k-1")
        const absent = yield* assign(withoutSubject)
        assert.strictEqual(absent.status, 400)
        assert.include(String(absent.body.detail), "subject")
      })
    )

    it.effect("1,000 concurrent assign calls for one new subject yield one variant and one exposure row", () =>
      Effect.gen(function* () {
        const results = yield* Effect.all(
          Array.from({ length: 1000 }, () => assign(params("crowd-1"))),
          { concurrency: 100 }
        )
        assert.isTrue(results.every((r) => r.status === 200))
        assert.strictEqual(new Set(results.map((r) => r.body.variant)).size, 1)
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ n: number; exposures: number }>`
        SELECT count(*) AS n, sum(exposures) AS exposures FROM experiment_exposures WHERE subject = 'crowd-1'`
        assert.deepStrictEqual({ ...rows[0] }, { n: 1, exposures: 1000 })
        const assigned = yield* sql<{
          n: number
        }>`SELECT count(*) AS n FROM experiment_assignments WHERE subject = 'crowd-1'`
        assert.strictEqual(assigned[0]?.n, 1)
      })
    )

    it.effect("an assignment and its exposure commit together: a failed exposure leaves neither", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TRIGGER refuse_exposure BEFORE INSERT ON experiment_exposures
        WHEN NEW.subject = 'atomic-1' BEGIN SELECT RAISE(ABORT, 'exposure store unavailable'); END`
        const failed = yield* assign(params("atomic-1"))
        assert.strictEqual(failed.status, 500)
        assert.strictEqual(failed.body.code, "INTERNAL_ERROR")
        const rows = yield* sql<{
          n: number
        }>`SELECT count(*) AS n FROM experiment_assignments WHERE subject = 'atomic-1'`
        assert.strictEqual(rows[0]?.n, 0)
        yield* sql`DROP TRIGGER refuse_exposure`
        assert.strictEqual((yield* assign(params("atomic-1"))).status, 200)
      })
    )
  }
)
