import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Option } from "effect"
import * as Yaml from "yaml"
import { FleetRegistry, JobDiagnosis, JobQueue, ServicesTest } from "../support/keel.js"

// Issue 42, item 12 (seed 002: "Provider-specific diagnostics live inside the matching adapter and are available
// only when that provider is enabled in the selected profile"): the registry's profiles enable provider adapters,
// settings.profile (or KEEL_PROFILE) selects one, and the GPU-quota diagnosis is the gcp adapter's.

const QUOTA_LINE =
  "googleapiclient.errors.HttpError: <HttpError 403 \"Quota 'PREEMPTIBLE_NVIDIA_T4_GPUS' exceeded. Limit: 8.0 in region us-central1.\">"

const registry = (extra: Record<string, unknown>) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-profiles-"))
  const file = path.join(dir, "registry.yml")
  fs.writeFileSync(
    file,
    Yaml.stringify({
      version: 1,
      profiles: { batch: { providers: ["gcp"] }, bare: { providers: [] } },
      targets: [{ name: "forge-1", os: "linux", channel: "local" }],
      ...extra
    })
  )
  return file
}

const layerWith = (env: Record<string, string>) =>
  ServicesTest().pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))))

/** A job that failed after printing the GPU quota error, and its status. */
const failedOnQuota = Effect.gen(function* () {
  const queue = yield* JobQueue
  const job = yield* queue.submit({ kind: "command", target: "forge-1", argv: ["train"] })
  Option.getOrThrow(yield* queue.claim("w", 60_000))
  yield* queue.appendOutput(job.id, [
    { stream: "stdout", line: "starting" },
    { stream: "stderr", line: QUOTA_LINE }
  ])
  yield* queue.complete(job.id, "w", { exitCode: 1 })
  return yield* (yield* JobDiagnosis).status(job.id)
})

describe("provider diagnostics per profile", () => {
  it.effect("the selected profile enables gcp: the GPU quota is diagnosed, by the gcp adapter", () =>
    Effect.gen(function* () {
      const { diagnosis } = yield* failedOnQuota
      assert.strictEqual(diagnosis?.id, "preemptible_gpu_quota")
      assert.strictEqual(diagnosis?.provider, "gcp")
      assert.strictEqual(diagnosis?.remedy, "raise the quota or add zones to MACHINE_TYPE_ZONES")
      assert.deepStrictEqual(diagnosis?.profile, { name: "batch", providers: ["gcp"], error: null })
    }).pipe(Effect.provide(layerWith({ KEEL_REGISTRY: registry({ settings: { profile: "batch" } }) })))
  )

  it.effect("a profile without gcp, or no profile at all: the same output is unknown, and the answer says why", () =>
    Effect.gen(function* () {
      const bare = yield* failedOnQuota.pipe(
        Effect.provide(layerWith({ KEEL_REGISTRY: registry({ settings: { profile: "batch" } }), KEEL_PROFILE: "bare" }))
      )
      assert.strictEqual(bare.diagnosis?.id, "unknown")
      assert.deepStrictEqual(bare.diagnosis?.profile, { name: "bare", providers: [], error: null })
      const none = yield* failedOnQuota.pipe(Effect.provide(layerWith({ KEEL_REGISTRY: registry({}) })))
      assert.strictEqual(none.diagnosis?.id, "unknown")
      assert.deepStrictEqual(none.diagnosis?.profile, { name: null, providers: [], error: null })
      const missing = yield* failedOnQuota.pipe(
        Effect.provide(layerWith({ KEEL_REGISTRY: registry({}), KEEL_PROFILE: "nope" }))
      )
      assert.strictEqual(missing.diagnosis?.id, "unknown")
      assert.strictEqual(
        missing.diagnosis?.profile.error,
        "no profile named nope in the registry (profiles: batch, bare)"
      )
      // The failures any job may show need no provider.
      const queue = yield* JobQueue
      const hub = yield* queue.submit({ kind: "command", target: "forge-1", argv: ["x"] })
      Option.getOrThrow(yield* queue.claim("w", 60_000))
      yield* queue.appendOutput(hub.id, [{ stream: "stderr", line: "HfHubHTTPError: 429 Too Many Requests" }])
      yield* queue.complete(hub.id, "w", { exitCode: 1 })
      const generic = (yield* (yield* JobDiagnosis).status(hub.id)).diagnosis
      assert.strictEqual(generic?.id, "hub_rate_limit")
      assert.strictEqual(generic?.provider, null)
    }).pipe(Effect.provide(layerWith({ KEEL_REGISTRY: registry({}) })))
  )

  it.effect("the registry refuses a selected profile it does not define and a provider Keel has no adapter for", () =>
    Effect.gen(function* () {
      const registryService = yield* FleetRegistry
      const refused = yield* Effect.flip(
        registryService.parse(
          Yaml.stringify({
            version: 1,
            settings: { profile: "gpu" },
            profiles: { batch: { providers: ["gcp", "aws"] } },
            targets: [{ name: "forge-1", os: "linux", channel: "local" }]
          }),
          "test.yml"
        )
      )
      assert.strictEqual(refused._tag, "FleetRegistryInvalid")
      const problems = refused._tag === "FleetRegistryInvalid" ? refused.problems.join("\n") : ""
      assert.include(problems, "profiles.batch.providers.1")
    }).pipe(Effect.provide(layerWith({})))
  )

  it.effect("the selected profile that names no profile is a cross-check problem", () =>
    Effect.gen(function* () {
      const registryService = yield* FleetRegistry
      const refused = yield* Effect.flip(
        registryService.parse(
          Yaml.stringify({
            version: 1,
            settings: { profile: "gpu" },
            profiles: { batch: { providers: ["gcp"] } },
            targets: [{ name: "forge-1", os: "linux", channel: "local" }]
          }),
          "test.yml"
        )
      )
      assert.strictEqual(refused._tag, "FleetRegistryInvalid")
      if (refused._tag === "FleetRegistryInvalid")
        assert.include(refused.problems, "settings.profile: no profile named gpu (profiles: batch)")
    }).pipe(Effect.provide(layerWith({})))
  )
})
