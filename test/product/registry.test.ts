import * as fs from "node:fs"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Either, Logger } from "effect"
import { JourneyRegistry, parseRegistry, ServicesTest } from "../support/keel.js"
import { registryDir, registryDoc } from "./registry-fixture.js"

const withRegistry = <A, E>(dir: string, body: (registry: JourneyRegistry) => Effect.Effect<A, E>, poll = "1 hour") =>
  Effect.flatMap(JourneyRegistry, body).pipe(
    Effect.provide(ServicesTest({ dataDir: dir })),
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["KEEL_PRODUCT_REGISTRY_POLL", poll]])))
  )

describe("journey registry", () => {
  it("refuses a bad document naming each offending path", () => {
    const doc = registryDoc() as { apps: Array<{ journeys: Array<{ experiment?: Record<string, unknown> }> }> }
    const experiment = doc.apps[0]!.journeys[0]!.experiment!
    experiment.traffic = 1.5
    experiment.status = "live"
    const result = parseRegistry("r.yml", JSON.stringify(doc))
    assert.isTrue(Either.isLeft(result))
    if (Either.isLeft(result)) {
      assert.include(result.left.detail, "apps.0.journeys.0.experiment.traffic")
      assert.include(result.left.detail, "apps.0.journeys.0.experiment.status")
    }
    const weights = parseRegistry("r.yml", JSON.stringify(registryDoc({ weights: [0.5, 0.2] })))
    assert.isTrue(Either.isLeft(weights) && weights.left.detail.includes("weights must sum to 1"))
    const yaml = parseRegistry("r.yml", "apps: [ {")
    assert.isTrue(Either.isLeft(yaml) && yaml.left.detail.startsWith("not valid YAML"))
    // Empty or comments only (a truncated write) is refused, so the last valid version keeps serving.
    for (const text of ["", "\n", "# apps were here\n"]) {
      const empty = parseRegistry("r.yml", text)
      assert.isTrue(Either.isLeft(empty) && empty.left.detail.includes("the file is empty"), JSON.stringify(text))
    }
    assert.isTrue(Either.isRight(parseRegistry("r.yml", "apps: []\n")), "no apps, said")
    // Values that must be unique are refused at the path of their second use, naming the first.
    type Doc = {
      apps: Array<{ app_id: string; journeys: Array<{ experiment?: { variants: Array<{ name: string }> } }> }>
    }
    const refusal = (change: (doc: Doc) => void) => {
      const doc = registryDoc() as Doc
      change(doc)
      const parsed = parseRegistry("r.yml", JSON.stringify(doc))
      return Either.isLeft(parsed) ? parsed.left.detail : "(accepted)"
    }
    // Another app with the same experiment: its id is refused where it is used again. Its client keys may be the
    // first app's: the request's app_id decides which app is asked for, the key only has to be that app's.
    const experimentTwice = refusal((doc) => doc.apps.push({ ...doc.apps[0]!, app_id: "other-app" }))
    assert.match(
      experimentTwice,
      /^apps\.1\.journeys\.0\.experiment\.id: experiment \S+ is used by two journeys \(also apps\.0\.journeys\.0\.experiment\.id\);/
    )
    assert.match(
      refusal((doc) => doc.apps.push({ ...doc.apps[0]!, journeys: [] })),
      /^apps\.1\.app_id: app \S+ is listed twice \(also apps\.0\.app_id\)$/
    )
    assert.match(
      refusal((doc) => doc.apps[0]!.journeys.push(doc.apps[0]!.journeys[0]!)),
      /^apps\.0\.journeys\.\d+: journey \S+ is listed twice \(also journeys\.0\)$/
    )
    assert.match(
      refusal((doc) => {
        const variants = doc.apps[0]!.journeys[0]!.experiment!.variants
        variants[1]!.name = variants[0]!.name
      }),
      /^apps\.0\.journeys\.0\.experiment\.variants\.1\.name: variant \S+ is listed twice \(also variants\.0\)$/
    )
    const sharedKeys = registryDoc() as Doc
    sharedKeys.apps.push({ ...sharedKeys.apps[0]!, app_id: "other-app", journeys: [] })
    assert.isTrue(Either.isRight(parseRegistry("r.yml", JSON.stringify(sharedKeys))), "a key shared by two apps")
    const extra = parseRegistry("r.yml", "apps: []\nsurprise: 1\n")
    assert.isTrue(Either.isLeft(extra) && extra.left.detail.includes("surprise"))
  })

  it.effect("a broken edit is refused and the last valid version keeps serving", () => {
    const fixture = registryDir()
    return withRegistry(fixture.dir, (registry) =>
      Effect.gen(function* () {
        const valid = yield* registry.current
        assert.isTrue(valid.apps.has("demo-ios"))
        fixture.write("apps:\n  - app_id: demo-ios\n    client_keys: short\n")
        const outcome = yield* registry.reload
        assert.strictEqual(outcome._tag, "Refused")
        if (outcome._tag === "Refused") assert.strictEqual(outcome.kept, valid.digest)
        assert.strictEqual((yield* registry.current).digest, valid.digest)
        assert.isDefined(yield* registry.app("demo-ios"))
        fixture.write(registryDoc({ weights: [0.9, 0.1] }))
        assert.strictEqual((yield* registry.reload)._tag, "Loaded")
        assert.strictEqual((yield* registry.reload)._tag, "Unchanged")
      })
    )
  })

  it.effect("a refused edit is logged once, not on every poll; a new broken edit is logged again", () => {
    const fixture = registryDir()
    const errors: Array<string> = []
    const logger = Logger.make(({ logLevel, message }) => {
      if (logLevel._tag === "Error") errors.push(String(Array.isArray(message) ? message[0] : message))
    })
    return withRegistry(fixture.dir, (registry) =>
      Effect.gen(function* () {
        fixture.write("apps:\n  - app_id: demo-ios\n    client_keys: short\n")
        for (let i = 0; i < 3; i++) assert.strictEqual((yield* registry.reload)._tag, "Refused")
        assert.strictEqual(errors.length, 1)
        fixture.write("apps: [ {")
        for (let i = 0; i < 2; i++) yield* registry.reload
        assert.strictEqual(errors.length, 2)
        // Back to a valid file, then the first broken edit again: that is news again.
        fixture.write(registryDoc({ weights: [0.9, 0.1] }))
        assert.strictEqual((yield* registry.reload)._tag, "Loaded")
        fixture.write("apps: [ {")
        yield* registry.reload
        assert.strictEqual(errors.length, 3)
        assert.isTrue(errors.every((e) => e.startsWith("product registry refused")))
      }).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
    )
  })

  it.effect("no registry file means no apps, until one appears", () => {
    const fixture = registryDir()
    fs.rmSync(fixture.file)
    return withRegistry(fixture.dir, (registry) =>
      Effect.gen(function* () {
        assert.strictEqual((yield* registry.current).apps.size, 0)
        assert.strictEqual((yield* registry.reload)._tag, "Missing")
        fixture.write(registryDoc())
        assert.strictEqual((yield* registry.reload)._tag, "Loaded")
      })
    )
  })

  it.live(
    "a change on disk is picked up without a restart",
    () => {
      const fixture = registryDir()
      return withRegistry(
        fixture.dir,
        (registry) =>
          Effect.gen(function* () {
            const before = (yield* registry.current).digest
            fixture.write(registryDoc({ traffic: 0.5 }))
            for (let i = 0; i < 50 && (yield* registry.current).digest === before; i++) yield* Effect.sleep("50 millis")
            assert.notStrictEqual((yield* registry.current).digest, before)
          }),
        "100 millis"
      )
    },
    20_000
  )
})
