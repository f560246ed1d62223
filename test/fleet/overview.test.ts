import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Option, TestClock } from "effect"
import { runCli } from "../support/cli.js"
import {
  AppConfigTest,
  beaconKey,
  capacityKey,
  FleetRegistry,
  JobQueue,
  MemoryObjectStoreLayer,
  ObjectGateway,
  Overview,
  SqlTest
} from "../support/keel.js"

const root = fileURLToPath(new URL("../..", import.meta.url))
const registryFile = path.join(root, "examples", "registry.yml")

/** Only what the overview reads: no other domain's pollers to replay when the test clock jumps to 2026. */
const withRegistry = (file: string) =>
  Overview.Default.pipe(
    Layer.provideMerge(JobQueue.Default),
    Layer.provideMerge(FleetRegistry.Default),
    Layer.provideMerge(ObjectGateway.Default),
    Layer.provideMerge(MemoryObjectStoreLayer),
    Layer.provideMerge(SqlTest),
    Layer.provideMerge(AppConfigTest()),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["KEEL_REGISTRY", file]]))))
  )

const beacon = (host: string, reportedAt: string, available: number | null) => ({
  schema: "keel.beacon/v1",
  host,
  os: "linux",
  reported_at: reportedAt,
  writer_version: "test",
  disks: [{ mount: "/", total_bytes: null, free_bytes: null, available_bytes: available, error: null }],
  units: []
})

describe("ctl overview", () => {
  it.effect("fleet freshness and verdicts, queue counts, slot quotas and this month's job-hours × rates", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(Date.UTC(2026, 10, 23, 10, 0, 0))
      const objects = yield* ObjectGateway
      const queue = yield* JobQueue
      const job = yield* queue.submit({ kind: "command", target: "forge-1", argv: ["true"] })
      yield* queue.claim("w", 24 * 3_600_000)
      yield* TestClock.adjust("2 hours")
      yield* queue.complete(job.id, "w", { exitCode: 0 })
      yield* queue.submit({ kind: "command", target: "forge-2", argv: ["true"] })
      yield* queue.claim("w", 24 * 3_600_000)
      yield* TestClock.adjust("30 minutes")
      const now = new Date(Date.UTC(2026, 10, 23, 12, 30, 0)).toISOString()
      yield* objects.putJson(beaconKey("forge-1"), beacon("forge-1", now, 100 * 1024 ** 3))
      yield* objects.putJson(beaconKey("forge-2"), beacon("forge-2", "2026-11-22T10:00:00.000Z", 10 * 1024 ** 3))
      yield* objects.putJson(capacityKey("forge-1"), {
        host: "forge-1",
        published_at: now,
        admitting: false,
        reason: "draining",
        state: "maintenance"
      })

      const report = yield* (yield* Overview).report()
      assert.strictEqual(report.fleet.state, "available")
      if (report.fleet.state !== "available") return
      const [forge1, forge2, mac] = report.fleet.hosts
      assert.strictEqual(forge1?.beacon.state === "available" && forge1.beacon.fresh, true)
      assert.deepStrictEqual(forge1 && "claiming" in forge1 ? forge1.claiming : undefined, {
        admits: false,
        reasons: ["capacity: draining"]
      })
      assert.strictEqual(forge2?.beacon.state === "available" && forge2.beacon.fresh, false)
      assert.isNull(forge2 && "claiming" in forge2 ? forge2.claiming : undefined) // stale evidence: no verdict
      assert.strictEqual(forge2 && "free_gb" in forge2 ? forge2.free_gb : undefined, 10)
      assert.strictEqual(mac?.beacon.state === "available" && mac.beacon.reported_at, null) // never published
      assert.isNull(mac && "free_bytes" in mac ? mac.free_bytes : undefined) // unknown, not 0

      assert.strictEqual(report.queue.state, "available")
      if (report.queue.state === "available") {
        assert.strictEqual(report.queue.counts.succeeded, 1)
        assert.strictEqual(report.queue.counts.running, 1)
      }
      assert.strictEqual(report.quota.state, "available")
      if (report.quota.state === "available")
        assert.deepStrictEqual(report.quota.targets, [
          { host: "forge-1", slots: 4, running: 0 },
          { host: "forge-2", slots: 2, running: 1 },
          { host: "studio-mac", slots: 1, running: 0 }
        ])
      assert.strictEqual(report.billing.state, "available")
      if (report.billing.state === "available") {
        assert.strictEqual(report.billing.month, "2026-11")
        assert.deepStrictEqual(
          report.billing.targets.map((t) => [t.host, t.job_hours, t.cost]),
          [
            ["forge-1", 2, 0.24],
            ["forge-2", 0.5, 0.93],
            ["studio-mac", 0, 0]
          ]
        )
        assert.strictEqual(report.billing.total, 1.17)
      }
    }).pipe(Effect.provide(withRegistry(registryFile)))
  )

  it.effect("an unreachable part is shown as unavailable, never as zero", () =>
    Effect.gen(function* () {
      const report = yield* (yield* Overview).report()
      for (const part of [report.fleet, report.quota, report.billing]) {
        assert.strictEqual(part.state, "unavailable")
        if (part.state === "unavailable") assert.match(part.error, /ENOENT/)
      }
      assert.strictEqual(report.queue.state, "available") // the queue answers on its own
      assert.isTrue(Option.isSome(Option.some(report)))
    }).pipe(Effect.provide(withRegistry("/nonexistent/registry.yml")))
  )

  it.live("the text says what it means: nothing queued, no declared slots, why the registry is a cached copy", () =>
    Effect.gen(function* () {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-overview-text-"))
      const registry = path.join(dir, "registry.yml")
      fs.writeFileSync(
        registry,
        JSON.stringify({ version: 1, targets: [{ name: "solo", os: "linux", channel: "local" }] })
      )
      const env = { KEEL_DATA_DIR: path.join(dir, "data"), KEEL_REGISTRY: registry }
      const first = yield* runCli(["overview"], env)
      assert.strictEqual(first.exitCode, 0, first.stderr)
      assert.include(first.stdout, "nothing queued")
      assert.include(first.stdout, "quota: solo 0/no declared slots")
      assert.strictEqual((yield* runCli(["registry", "show"], env)).exitCode, 0) // records the last valid copy
      fs.rmSync(registry)
      const cached = yield* runCli(["overview"], env)
      assert.match(cached.stdout, /registry: the last valid copy \(cannot read the source: .*ENOENT/)
    })
  )
})
