import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { runCli } from "../support/cli.js"
import {
  AppConfigTest,
  beaconKey,
  capacityKey,
  FleetRegistry,
  Gates,
  HostChannel,
  HostChannelLive,
  HostChannelTest,
  JobQueue,
  MemoryObjectStoreLayer,
  makeMemoryHostChannel,
  ObjectGateway,
  ObjectStore,
  parseDfAvailable,
  ServicesTest,
  VaultTest
} from "../support/keel.js"

const root = fileURLToPath(new URL("../..", import.meta.url))
const registryFile = path.join(root, "examples", "registry.yml")

const withEnv = (env: Record<string, string>) =>
  Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))

/** What the gates did besides reading: object writes and host commands, recorded. */
const recorder = () => {
  const writes: Array<string> = []
  const commands: Array<ReadonlyArray<string>> = []
  const objects = Layer.effect(
    ObjectStore,
    Effect.map(ObjectStore, (store) => ({
      ...store,
      put: (key: string, bytes: Uint8Array) => {
        writes.push(key)
        return store.put(key, bytes)
      },
      putIfAbsent: (key: string, bytes: Uint8Array) => {
        writes.push(key)
        return store.putIfAbsent(key, bytes)
      },
      putIfMatch: (key: string, expected: string, bytes: Uint8Array) => {
        writes.push(key)
        return store.putIfMatch(key, expected, bytes)
      },
      delete: (key: string) => {
        writes.push(key)
        return store.delete(key)
      }
    }))
  ).pipe(Layer.provide(MemoryObjectStoreLayer))
  const channel = Layer.effect(
    HostChannel,
    Effect.map(HostChannel, (live) => ({
      run: (spec: Parameters<HostChannel["Type"]["run"]>[0], request: Parameters<HostChannel["Type"]["run"]>[1]) => {
        commands.push(request.argv)
        return live.run(spec, request)
      }
    }))
  ).pipe(
    Layer.provide(HostChannelLive),
    Layer.provide(VaultTest),
    Layer.provide(AppConfigTest({ dataDir: fs.mkdtempSync(path.join(os.tmpdir(), "keel-gates-run-")) }))
  )
  return { writes, commands, objects, channel }
}

const GatesTest = (env: Record<string, string>, record = recorder()) =>
  Gates.Default.pipe(
    Layer.provideMerge(record.channel),
    Layer.provideMerge(ServicesTest().pipe(Layer.provide(record.objects))),
    Layer.provideMerge(record.objects),
    Layer.provide(withEnv(env))
  )

const beacon = (host: string, reportedAt: string) => ({
  schema: "keel.beacon/v1",
  host,
  os: "linux",
  reported_at: reportedAt,
  writer_version: "test",
  disks: [],
  units: []
})

describe("admission gates", () => {
  it("df -Pk output is read in exact 1024-byte blocks", () => {
    const df =
      "Filesystem     1024-blocks      Used Available Capacity Mounted on\n/dev/vda1        264211700  23987620 82466768      23% /\n"
    assert.strictEqual(parseDfAvailable(df), 82466768 * 1024)
    assert.isUndefined(parseDfAvailable("garbage"))
  })

  it.live("a complete report: every read complete, disk from the host, verdict from the unrounded bytes", () =>
    Effect.gen(function* () {
      const objects = yield* ObjectGateway
      yield* objects.putJson(beaconKey("forge-1"), beacon("forge-1", new Date().toISOString()))
      const report = yield* (yield* Gates).report("forge-1")
      assert.isTrue(report.complete, JSON.stringify(report.observations))
      assert.deepStrictEqual(
        report.observations.map((o) => [o.operation, o.state]),
        [
          ["registry.read", "complete"],
          ["object.get", "complete"],
          ["host.disk", "complete"],
          ["object.get", "absent"],
          ["queue.stats", "complete"]
        ]
      )
      for (const o of report.observations) {
        assert.strictEqual(o.budget_ms, 10_000)
        assert.isAtLeast(o.elapsed_ms ?? -1, 0)
      }
      assert.isAbove(report.disk.free_bytes ?? 0, 0)
      assert.strictEqual(report.disk.low_free_gb, 40)
      assert.strictEqual(report.below_watermark, (report.disk.free_bytes ?? 0) < 40 * 1024 ** 3)
      assert.strictEqual(report.pressure_source, "host_disk_measurement")
      assert.deepStrictEqual(report.claiming?.reasons, report.below_watermark ? ["disk_below_watermark"] : [])

      // The agent's current publication decides, and its own reason is carried unchanged.
      yield* objects.putJson(capacityKey("forge-1"), {
        host: "forge-1",
        published_at: new Date().toISOString(),
        admitting: false,
        reason: "gpu slots full (4/4)",
        state: "saturated"
      })
      yield* (yield* JobQueue).pause
      const refused = yield* (yield* Gates).report("forge-1")
      assert.strictEqual(refused.pressure_source, "capacity_publication")
      assert.deepStrictEqual(refused.capacity.diagnostics, {
        reason: "gpu slots full (4/4)",
        state: "saturated",
        admitting: false
      })
      assert.deepStrictEqual(refused.claiming, {
        admits: false,
        reasons: ["queue_paused", "capacity: gpu slots full (4/4)"]
      })

      // Never current: a publication about another host, or dated in the future (it would admit for ever).
      for (const forged of [
        { host: "forge-2", published_at: new Date().toISOString() },
        { host: "forge-1", published_at: "2099-01-01T00:00:00Z" }
      ]) {
        yield* objects.putJson(capacityKey("forge-1"), {
          ...forged,
          admitting: true,
          reason: "all clear",
          state: "idle"
        })
        const ignored = yield* (yield* Gates).report("forge-1")
        assert.strictEqual(ignored.pressure_source, "host_disk_measurement", JSON.stringify(forged))
      }
    }).pipe(Effect.provide(GatesTest({ KEEL_REGISTRY: registryFile })))
  )

  it.live("a corrupt capacity publication is reported but, being optional, leaves the report complete", () =>
    Effect.gen(function* () {
      const objects = yield* ObjectGateway
      yield* objects.putJson(beaconKey("forge-1"), beacon("forge-1", new Date().toISOString()))
      yield* objects.putJson(capacityKey("forge-1"), { host: "forge-1", admitting: "maybe" })
      const report = yield* (yield* Gates).report("forge-1")
      assert.isTrue(report.complete, JSON.stringify(report.observations))
      const capacity = report.observations[3]!
      assert.strictEqual(capacity.state, "error")
      assert.match(capacity.error ?? "", /^invalid document state\/capacity\/forge-1\.json/)
      // The fields that are wrong, never a schema dump or the values a host wrote.
      assert.include(capacity.error ?? "", "published_at: is missing")
      assert.notInclude(capacity.error ?? "", "readonly")
      assert.notInclude(capacity.error ?? "", "maybe")
      assert.strictEqual(report.pressure_source, "host_disk_measurement") // never used
      assert.isNull(report.capacity.diagnostics)
    }).pipe(Effect.provide(GatesTest({ KEEL_REGISTRY: registryFile })))
  )

  it.live(
    "capacity bytes that are not JSON are an invalid document too: reported, not quoted, the report complete",
    () =>
      Effect.gen(function* () {
        const objects = yield* ObjectGateway
        yield* objects.putJson(beaconKey("forge-1"), beacon("forge-1", new Date().toISOString()))
        yield* objects.put(capacityKey("forge-1"), new TextEncoder().encode("garbage-bytes\n"))
        const report = yield* (yield* Gates).report("forge-1")
        assert.isTrue(report.complete, JSON.stringify(report.observations))
        const capacity = report.observations[3]!
        assert.strictEqual(capacity.state, "error")
        assert.strictEqual(capacity.error, "invalid document state/capacity/forge-1.json: not JSON")
        assert.strictEqual(report.pressure_source, "host_disk_measurement")
      }).pipe(Effect.provide(GatesTest({ KEEL_REGISTRY: registryFile })))
  )

  it.live("incomplete reports: an absent beacon, an unknown host (the disk read is skipped, never absent)", () =>
    Effect.gen(function* () {
      const gates = yield* Gates
      const noBeacon = yield* gates.report("forge-1")
      assert.isFalse(noBeacon.complete)
      assert.isNull(noBeacon.claiming)
      assert.strictEqual(noBeacon.observations[1]?.state, "absent")
      const unknown = yield* gates.report("ghost")
      assert.strictEqual(unknown.observations[0]?.state, "error")
      assert.strictEqual(unknown.observations[2]?.state, "skipped")
      assert.isNull(unknown.disk.free_bytes) // unknown, never 0
      assert.isNull(unknown.disk.free_gb)
    }).pipe(Effect.provide(GatesTest({ KEEL_REGISTRY: registryFile })))
  )

  const movingRegistry = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-gates-")), "registry.yml")
  it.live("a registry answered from its snapshot is cached, not complete, and the report may still finish", () =>
    Effect.gen(function* () {
      const file = movingRegistry
      fs.copyFileSync(registryFile, file)
      yield* (yield* FleetRegistry).load() // the last valid snapshot
      fs.rmSync(file)
      yield* (yield* ObjectGateway).putJson(beaconKey("forge-1"), beacon("forge-1", new Date().toISOString()))
      const report = yield* (yield* Gates).report("forge-1")
      assert.strictEqual(report.observations[0]?.state, "cached")
      assert.isTrue(report.complete)
    }).pipe(Effect.provide(GatesTest({ KEEL_REGISTRY: movingRegistry })))
  )

  it.live("gates only read: across every failure mode, no object write and no host command but df", () => {
    const record = recorder()
    return Effect.gen(function* () {
      const gates = yield* Gates
      const objects = yield* ObjectStore
      yield* gates.report("forge-1") // beacon absent
      yield* gates.report("ghost") // unknown host
      yield* objects.put(
        beaconKey("forge-1"),
        new TextEncoder().encode(JSON.stringify(beacon("forge-1", "2020-01-01T00:00:00Z")))
      )
      yield* objects.put(capacityKey("forge-1"), new TextEncoder().encode("{not json"))
      yield* gates.report("forge-1") // stale beacon, unreadable capacity
      record.writes.splice(0, 2) // the two writes this test made itself
      assert.deepStrictEqual(record.writes, [])
      assert.isAbove(record.commands.length, 0)
      for (const argv of record.commands) assert.strictEqual(argv[0], "df")
    }).pipe(Effect.provide(GatesTest({ KEEL_REGISTRY: registryFile }, record)))
  })

  it.live("every read hanging past its budget: the report returns within budget + 1 s, all timed_out", () =>
    Effect.gen(function* () {
      const started = Date.now()
      const report = yield* (yield* Gates).report("forge-1")
      const elapsed = Date.now() - started
      assert.isBelow(elapsed, 2_000 + 1_000)
      assert.isFalse(report.complete)
      assert.deepStrictEqual(
        report.observations.map((o) => o.state),
        ["timed_out", "timed_out", "skipped", "timed_out", "timed_out"]
      )
    }).pipe(
      Effect.provide(
        Gates.Default.pipe(
          Layer.provide(
            Layer.mergeAll(
              Layer.succeed(
                FleetRegistry,
                FleetRegistry.make({
                  read: () => Effect.never,
                  readSourceNow: () => Effect.never,
                  serveFromHeld: () => Effect.void,
                  reread: Effect.never,
                  load: () => Effect.never,
                  parse: () => Effect.never,
                  lastValid: Effect.never,
                  cachedOnly: () => Effect.never,
                  bundled: () => Effect.never,
                  origin: {
                    location: undefined,
                    isGit: false,
                    ref: undefined,
                    filePath: "registry.yml",
                    mirrorsDir: "/nonexistent",
                    gitTimeoutMs: 0
                  }
                })
              ),
              HostChannelTest(makeMemoryHostChannel(() => Effect.never)),
              Layer.effect(
                JobQueue,
                Effect.map(JobQueue, (queue) => JobQueue.make({ ...queue, stats: Effect.never }))
              ).pipe(Layer.provide(ServicesTest())),
              ObjectGateway.Default.pipe(
                Layer.provide(
                  Layer.effect(
                    ObjectStore,
                    Effect.map(ObjectStore, (store) => ({ ...store, get: () => Effect.never }))
                  ).pipe(Layer.provide(MemoryObjectStoreLayer))
                )
              ),
              AppConfigTest()
            )
          ),
          Layer.provide(withEnv({ KEEL_GATES_BUDGET: "2 seconds" }))
        )
      )
    )
  )
})

describe("ctl host gates", () => {
  it.live("exits non-zero when the report is incomplete, and prints the verdict first", () =>
    Effect.gen(function* () {
      const env = {
        KEEL_DATA_DIR: path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-gates-cli-")), "data"),
        KEEL_REGISTRY: registryFile
      }
      const run = yield* runCli(["host", "gates", "forge-1"], env)
      assert.strictEqual(run.exitCode, 1)
      assert.match(run.stdout.split("\n")[0] ?? "", /^forge-1: INCOMPLETE/)
      const json = JSON.parse((yield* runCli(["host", "gates", "forge-1", "--json"], env)).stdout)
      assert.strictEqual(json.complete, false)
      assert.isNull(json.claiming)
    })
  )
})
