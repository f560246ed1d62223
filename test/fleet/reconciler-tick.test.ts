import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Clock, ConfigProvider, Context, Effect, Layer, Option, Schema, TestClock } from "effect"
import * as Yaml from "yaml"
import {
  AutonomyControl,
  autonomyTicks,
  beaconKey,
  FleetRegistry,
  HostUnits,
  LATEST_REPORT_KEY,
  Leases,
  type MemoryHostUnits,
  makeMemoryAlerts,
  makeMemoryHostUnits,
  ObjectGateway,
  ReconcilerTest,
  renderUnit,
  ServiceDeclaration,
  ServiceReconciler,
  type ServiceReport,
  type ServiceRow,
  serviceLeaseKey
} from "../support/keel.js"

// Issue 17: the tick — evidence from beacons, the endpoint sweep and host probes; the decision; execution
// within the mode, max_actions_per_tick, the pause, the breaker and the per-service lease; alerts; reports.
// Hosts are memory service managers here (every host command recorded); test/fleet/reconciler-e2e.test.ts
// runs the same on real processes.

const API = "/opt/keel/bin/api"
const WORKER = "/opt/keel/bin/worker"
const SHA_A = "a".repeat(64)
const SHA_B = "b".repeat(64)

const fleet = (settings: Record<string, unknown> = {}) => ({
  version: 1,
  settings: { host_silence_seconds: 900, max_actions_per_tick: 5, autonomy_mode: "enforce-owned", ...settings },
  targets: [
    {
      name: "alpha",
      os: "linux",
      channel: "local",
      services: [
        {
          name: "api",
          unit: "/etc/systemd/system/keel-api.service",
          program: API,
          args: ["serve"],
          endpoint: { url: "http://alpha.internal:8080/health", consumers: ["beta"] }
        },
        {
          name: "beacon",
          unit: "/etc/systemd/system/keel-beacon.service",
          program: "/usr/local/bin/ctl",
          args: ["host", "beacon", "write"],
          kind: "oneshot-timer",
          role: "beacon"
        },
        { name: "legacy", unit: "/etc/systemd/system/legacy.service" },
        { name: "recovery", unit: "/etc/systemd/system/keel-recovery.service", kind: "recovery-managed" }
      ]
    },
    {
      name: "beta",
      os: "linux",
      channel: "local",
      services: [{ name: "worker", unit: "/etc/systemd/system/keel-worker.service", program: WORKER, args: ["work"] }]
    }
  ]
})

const declaration = (target: string, name: string, registry = fleet()) =>
  Schema.decodeUnknownSync(ServiceDeclaration)(
    registry.targets.find((t) => t.name === target)!.services.find((s) => s.name === name)
  )

/** A registry file and the test graph reading it. */
const setup = (settings: Record<string, unknown> = {}) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-reconciler-"))
  const file = path.join(dir, "registry.yml")
  fs.writeFileSync(file, Yaml.stringify(fleet(settings)))
  const hosts = makeMemoryHostUnits()
  const alerts = makeMemoryAlerts()
  const layer = ReconcilerTest({ hosts, alerts, overrides: { dataDir: dir } }).pipe(
    Layer.provide(
      Layer.setConfigProvider(
        ConfigProvider.fromMap(
          new Map([
            ["KEEL_REGISTRY", file],
            ["KEEL_HOST", "control"]
          ])
        )
      )
    )
  )
  return { dir, file, hosts, alerts, layer }
}

/** Installs a declared unit on its memory host and starts it: a correctly installed, running service. */
const install = (hosts: MemoryHostUnits, target: string, name: string, sha = SHA_A) =>
  Effect.gen(function* () {
    const decl = declaration(target, name)
    const host = hosts.host(target)
    if (decl.program !== undefined) host.setProgram(decl.program, sha)
    yield* host.manager.ensure(renderUnit(decl, "linux"))
    return decl
  })

/** The host publishes its beacon: each declared unit as its service manager reports it (optionally omitting some). */
const publishBeacon = (
  hosts: MemoryHostUnits,
  target: string,
  options: { omit?: ReadonlyArray<string>; ageSeconds?: number } = {}
) =>
  Effect.gen(function* () {
    const objects = yield* ObjectGateway
    const now = yield* Clock.currentTimeMillis
    const spec = fleet().targets.find((t) => t.name === target)!
    const units = []
    for (const service of spec.services) {
      if (options.omit?.includes(service.name)) continue
      units.push(
        yield* hosts.host(target).manager.inspect({ name: service.name, unit: service.unit, program: service.program })
      )
    }
    yield* objects.putJson(beaconKey(target), {
      schema: "keel.beacon/v1",
      host: target,
      os: "linux",
      reported_at: new Date(now - (options.ageSeconds ?? 0) * 1000).toISOString(),
      writer_version: "test",
      disks: [],
      units
    })
  })

const row = (report: ServiceReport, target: string, name: string) =>
  report.services.find((s) => s.target === target && s.name === name) as ServiceRow

const tick = Effect.flatMap(ServiceReconciler, (r) => r.tick("manual"))

/** A healthy fleet: every complete service installed and running, beacons fresh. */
const healthyFleet = (hosts: MemoryHostUnits) =>
  Effect.gen(function* () {
    yield* install(hosts, "alpha", "api")
    yield* install(hosts, "alpha", "beacon")
    yield* install(hosts, "beta", "worker")
    // The path-only and recovery-managed units exist on the host, installed by someone else.
    hosts.host("alpha").set("/etc/systemd/system/legacy.service", {
      ...(yield* hosts.host("alpha").manager.inspect({ name: "legacy", unit: "/etc/systemd/system/keel-api.service" })),
      fragment_path: "/etc/systemd/system/legacy.service"
    })
    yield* publishBeacon(hosts, "alpha")
    yield* publishBeacon(hosts, "beta")
  })

describe("a tick on a healthy fleet", () => {
  it.effect("reports every unit healthy, plans nothing, runs nothing, writes latest.json and the run record", () => {
    const { hosts, layer } = setup()
    return Effect.gen(function* () {
      yield* healthyFleet(hosts)
      const before = hosts.commands.length
      const report = yield* tick
      assert.deepStrictEqual(
        report.services.map((s) => [s.target, s.name, s.decision.state, s.execution.status]),
        [
          ["alpha", "api", "healthy", "none"],
          ["alpha", "beacon", "healthy", "none"],
          ["alpha", "legacy", "healthy", "none"],
          ["alpha", "recovery", "recovery_managed", "none"],
          ["beta", "worker", "healthy", "none"]
        ]
      )
      assert.strictEqual(hosts.commands.length, before, "no host command")
      const objects = yield* ObjectGateway
      const latest = Option.getOrThrow(yield* objects.getJson(LATEST_REPORT_KEY)) as ServiceReport
      assert.strictEqual(latest.run_id, report.run_id)
      const run = Option.getOrThrow(yield* objects.getJson(report.report_keys.run!)) as ServiceReport
      assert.deepStrictEqual(run.services, latest.services)
      // What is stored says where it is stored (`ctl optimize status` prints latest's report_keys, never null).
      assert.deepStrictEqual(latest.report_keys, { latest: LATEST_REPORT_KEY, run: report.report_keys.run })
      assert.deepStrictEqual(run.report_keys, report.report_keys)
      assert.strictEqual(latest.write_error, null)
      assert.match(
        report.report_keys.run!,
        /^state\/autonomy\/services\/runs\/1970-01-01T00-00-00\.000Z-[0-9a-f]{6}\.json$/
      )
    }).pipe(Effect.provide(layer))
  })
})

describe("the first table, executed (EnforceOwned)", () => {
  it.effect("failed → ensure restarts the matching definition in place", () => {
    const { hosts, layer } = setup()
    return Effect.gen(function* () {
      yield* healthyFleet(hosts)
      const alpha = hosts.host("alpha")
      const api = declaration("alpha", "api")
      alpha.set(api.unit, {
        ...(yield* alpha.manager.inspect(api)),
        active_state: "failed",
        main_pid: 0,
        process: null
      })
      yield* publishBeacon(hosts, "alpha")
      const report = yield* tick
      assert.deepInclude(row(report, "alpha", "api").decision, { state: "failed", action: "ensure" })
      assert.deepInclude(row(report, "alpha", "api").execution, { status: "succeeded", change: "restarted" })
      assert.deepStrictEqual(hosts.commands.slice(-2), [
        "alpha: enable keel-api.service",
        "alpha: restart keel-api.service"
      ])
    }).pipe(Effect.provide(layer))
  })

  it.effect("missing (the host reports it absent) → ensure creates it from its declaration", () => {
    const { hosts, layer } = setup()
    return Effect.gen(function* () {
      // beta is a fresh machine: its worker was never installed, and its beacon says not-found.
      hosts.setSilent("alpha", true)
      yield* publishBeacon(hosts, "beta")
      const report = yield* tick
      assert.deepInclude(row(report, "beta", "worker").decision, { state: "missing", action: "ensure" })
      assert.deepInclude(row(report, "beta", "worker").execution, { status: "succeeded", change: "created" })
      assert.deepStrictEqual(hosts.commands, [
        "beta: install /etc/systemd/system/keel-worker.service",
        "beta: daemon-reload",
        "beta: enable keel-worker.service",
        "beta: restart keel-worker.service"
      ])
    }).pipe(Effect.provide(layer))
  })

  it.effect("a live process on a stale copy of its binary → kicked onto the binary on disk", () => {
    const { hosts, layer } = setup()
    return Effect.gen(function* () {
      yield* healthyFleet(hosts)
      hosts.host("beta").setProgram(WORKER, SHA_B) // a deployment replaced the file
      yield* publishBeacon(hosts, "beta")
      const report = yield* tick
      assert.deepInclude(row(report, "beta", "worker").decision, { state: "stale_binary", action: "kick" })
      assert.deepInclude(row(report, "beta", "worker").execution, { status: "succeeded", change: "kicked" })
      const after = yield* hosts.host("beta").manager.inspect(declaration("beta", "worker"))
      assert.strictEqual(after.process?.sha256, SHA_B)
    }).pipe(Effect.provide(layer))
  })

  it.effect("a process running a binary the unit never declared → identity_unresolved, refused, no command", () => {
    const { hosts, layer } = setup()
    return Effect.gen(function* () {
      yield* healthyFleet(hosts)
      const beta = hosts.host("beta")
      const worker = declaration("beta", "worker")
      const state = yield* beta.manager.inspect(worker)
      beta.set(worker.unit, {
        ...state,
        process: { pid: state.main_pid!, executable: "/usr/bin/python3", sha256: SHA_B }
      })
      yield* publishBeacon(hosts, "beta")
      const before = hosts.commands.length
      const report = yield* tick
      assert.deepInclude(row(report, "beta", "worker"), { refusal: "identity_unresolved" })
      assert.strictEqual(row(report, "beta", "worker").execution.status, "refused")
      assert.strictEqual(hosts.commands.length, before)
    }).pipe(Effect.provide(layer))
  })

  it.effect("a silent host: every unit unknown; its beacon unit's timer reasserted when the channel answers", () => {
    const { hosts, layer } = setup()
    return Effect.gen(function* () {
      yield* healthyFleet(hosts)
      const alpha = hosts.host("alpha")
      const api = declaration("alpha", "api")
      alpha.set(api.unit, { ...(yield* alpha.manager.inspect(api)), active_state: "failed" })
      yield* publishBeacon(hosts, "alpha", { ageSeconds: 901 })
      hosts.setSilent("alpha", true)
      const silent = yield* tick
      assert.deepInclude(row(silent, "alpha", "api").decision, { state: "unknown", action: "none" })
      assert.deepInclude(row(silent, "alpha", "beacon").decision, { state: "unknown", action: "none" })
      assert.isFalse(row(silent, "alpha", "beacon").evidence.channel_answers)

      hosts.setSilent("alpha", false)
      const answering = yield* tick
      assert.deepInclude(row(answering, "alpha", "beacon").decision, {
        state: "beacon_silent",
        action: "reassert_beacon"
      })
      assert.deepInclude(row(answering, "alpha", "beacon").execution, { status: "succeeded", change: "reasserted" })
      assert.deepInclude(
        row(answering, "alpha", "api").decision,
        { state: "unknown" },
        "the failed api waits for real evidence"
      )
      assert.deepStrictEqual(hosts.commands.slice(-2), [
        "alpha: enable keel-beacon.timer",
        "alpha: start keel-beacon.timer"
      ])
      assert.notInclude(hosts.commands, "alpha: restart keel-api.service")
    }).pipe(Effect.provide(layer))
  })

  it.effect(
    "an operator's reassert of a service that is not a oneshot timer is refused before the host, never a breaker failure",
    () => {
      const { hosts, layer } = setup()
      return Effect.gen(function* () {
        yield* healthyFleet(hosts)
        const reconciler = yield* ServiceReconciler
        const before = hosts.commands.length
        for (let i = 0; i < 4; i++) {
          const refused = yield* Effect.flip(reconciler.operate("reassert", "api", "alpha"))
          assert.deepInclude(refused, { _tag: "ServiceOperationRefused", code: "REASSERT_REFUSED" })
        }
        const incomplete = yield* Effect.flip(reconciler.operate("ensure", "legacy", "alpha"))
        assert.deepInclude(incomplete, { _tag: "ServiceOperationRefused", code: "DECLARATION_INCOMPLETE" })
        assert.strictEqual(hosts.commands.length, before, "nothing ran on the host")
        const policy = reconciler.policyOf(yield* (yield* FleetRegistry).read())
        assert.strictEqual((yield* (yield* AutonomyControl).breaker("alpha", policy)).failures, 0)
      }).pipe(Effect.provide(layer))
    }
  )

  // Issue 42 item 9: seed 002 repair rule 6 is one rule for the tick and for an operator's `ctl service ensure`.
  it.effect(
    "an operator's ensure of the beacon is refused (rule 6) before the host, as the tick never ensures it; reassert repairs it",
    () => {
      const { hosts, layer } = setup()
      return Effect.gen(function* () {
        yield* healthyFleet(hosts)
        const reconciler = yield* ServiceReconciler
        const before = hosts.commands.length
        const refused = yield* Effect.flip(reconciler.operate("ensure", "beacon", "alpha"))
        assert.deepInclude(refused, { _tag: "ServiceOperationRefused", code: "ENSURE_REFUSED" })
        assert.include((refused as { detail: string }).detail, "rule 6")
        assert.strictEqual(hosts.commands.length, before, "no unit is created or reloaded on the host")
        const policy = reconciler.policyOf(yield* (yield* FleetRegistry).read())
        assert.strictEqual((yield* (yield* AutonomyControl).breaker("alpha", policy)).failures, 0)
        // The repair rule 6 allows: re-enable the installed timer.
        const reasserted = yield* reconciler.operate("reassert", "beacon", "alpha")
        assert.strictEqual(reasserted.change, "reasserted")
      }).pipe(Effect.provide(layer))
    }
  )

  it.effect(
    "a declaration without program → declaration_incomplete, refused; recovery-managed units are left alone",
    () => {
      const { hosts, layer } = setup()
      return Effect.gen(function* () {
        yield* healthyFleet(hosts)
        const fresh = makeMemoryHostUnits() // neither legacy nor recovery is installed on the host
        const objects = yield* ObjectGateway
        const beacon = Option.getOrThrow(yield* objects.getJson(beaconKey("alpha"))) as {
          units: Array<{ name: string }>
        }
        const absent = yield* fresh
          .host("alpha")
          .manager.inspect({ name: "legacy", unit: "/etc/systemd/system/legacy.service" })
        const absentRecovery = yield* fresh
          .host("alpha")
          .manager.inspect({ name: "recovery", unit: "/etc/systemd/system/keel-recovery.service" })
        yield* objects.putJson(beaconKey("alpha"), {
          ...beacon,
          units: beacon.units.map((u) => (u.name === "legacy" ? absent : u.name === "recovery" ? absentRecovery : u))
        })
        const report = yield* tick
        assert.deepInclude(row(report, "alpha", "legacy"), { refusal: "declaration_incomplete" })
        assert.deepInclude(row(report, "alpha", "recovery").decision, { state: "recovery_managed", action: "none" })
        assert.notInclude(hosts.commands.join("\n"), "legacy")
        assert.notInclude(hosts.commands.join("\n"), "recovery")
      }).pipe(Effect.provide(layer))
    }
  )
})

describe("the second table: a fresh beacon omits a declared unit", () => {
  it.effect(
    "observed, loaded elsewhere with the declared program → the corrected path is adopted into the registry",
    () => {
      const { hosts, layer, file } = setup()
      return Effect.gen(function* () {
        yield* healthyFleet(hosts)
        // The host runs the api from another unit path than declared, and its beacon omits it.
        const alpha = hosts.host("alpha")
        const api = declaration("alpha", "api")
        const state = yield* alpha.manager.inspect(api)
        alpha.set(api.unit, { ...state, fragment_path: "/usr/lib/systemd/system/keel-api.service" })
        yield* publishBeacon(hosts, "alpha", { omit: ["api"] })
        hosts.setEndpoint("beta", "http://alpha.internal:8080/health", "observed")
        const report = yield* tick
        assert.strictEqual(row(report, "alpha", "api").evidence.endpoint, "observed")
        assert.deepStrictEqual(row(report, "alpha", "api").evidence.endpoint_probes, [
          { from: "beta", result: "observed", detail: null }
        ])
        assert.deepInclude(row(report, "alpha", "api").decision, {
          state: "relocated",
          action: "adopt",
          unit: "/usr/lib/systemd/system/keel-api.service"
        })
        assert.deepInclude(row(report, "alpha", "api").execution, { status: "succeeded", change: "adopted" })
        const written = Yaml.parse(fs.readFileSync(file, "utf8"))
        assert.strictEqual(written.targets[0].services[0].unit, "/usr/lib/systemd/system/keel-api.service")
      }).pipe(Effect.provide(layer))
    }
  )

  it.effect(
    "observed, but the live process is not the declared program → identity_unresolved, no duplicate created",
    () => {
      const { hosts, layer } = setup()
      return Effect.gen(function* () {
        yield* healthyFleet(hosts)
        const alpha = hosts.host("alpha")
        const api = declaration("alpha", "api")
        const state = yield* alpha.manager.inspect(api)
        alpha.set(api.unit, { ...state, process: { pid: 7, executable: "/usr/sbin/nginx", sha256: SHA_B } })
        yield* publishBeacon(hosts, "alpha", { omit: ["api"] })
        hosts.setEndpoint("beta", "http://alpha.internal:8080/health", "observed")
        const before = hosts.commands.length
        const report = yield* tick
        assert.deepInclude(row(report, "alpha", "api"), { refusal: "identity_unresolved" })
        assert.strictEqual(hosts.commands.length, before, "no unit created beside the unknown one")
      }).pipe(Effect.provide(layer))
    }
  )

  it.effect("unreachable → the ensure path (create, restart or guarded reload) and the running postcondition", () => {
    const { hosts, layer } = setup()
    return Effect.gen(function* () {
      yield* healthyFleet(hosts)
      const alpha = hosts.host("alpha")
      const api = declaration("alpha", "api")
      alpha.set(api.unit, {
        ...(yield* alpha.manager.inspect(api)),
        active_state: "inactive",
        main_pid: 0,
        process: null
      })
      yield* publishBeacon(hosts, "alpha", { omit: ["api"] })
      hosts.setEndpoint("beta", "http://alpha.internal:8080/health", "unreachable")
      const report = yield* tick
      assert.deepInclude(row(report, "alpha", "api").decision, { state: "missing", action: "ensure" })
      assert.deepInclude(row(report, "alpha", "api").execution, { status: "succeeded", change: "restarted" })
      assert.strictEqual((yield* alpha.manager.inspect(api)).active_state, "active")
    }).pipe(Effect.provide(layer))
  })

  it.effect(
    "not in the service directory → the host probe decides: only a unit the host reports absent is ensured",
    () => {
      const { hosts, layer } = setup()
      return Effect.gen(function* () {
        yield* healthyFleet(hosts)
        yield* publishBeacon(hosts, "beta", { omit: ["worker"] })
        const present = yield* tick
        assert.deepInclude(row(present, "beta", "worker").decision, { state: "healthy", action: "none" })
        assert.strictEqual(row(present, "beta", "worker").evidence.endpoint, "not_declared")

        const gone = makeMemoryHostUnits()
        yield* Effect.provideService(
          Effect.gen(function* () {
            const report = yield* tick
            assert.deepInclude(row(report, "beta", "worker").decision, { state: "missing", action: "ensure" })
            assert.deepInclude(row(report, "beta", "worker").execution, { status: "succeeded", change: "created" })
            assert.include(gone.commands, "beta: install /etc/systemd/system/keel-worker.service")
          }).pipe(Effect.provide(ServiceReconciler.Default)),
          HostUnits,
          gone.units
        )
      }).pipe(Effect.provide(layer))
    }
  )

  it.effect("unverified (the consumer could not probe) → endpoint_unverified, nothing changes", () => {
    const { hosts, layer } = setup()
    return Effect.gen(function* () {
      yield* healthyFleet(hosts)
      yield* publishBeacon(hosts, "alpha", { omit: ["api"] })
      hosts.setEndpoint("beta", "http://alpha.internal:8080/health", "channel_fails")
      const before = hosts.commands.length
      const report = yield* tick
      assert.deepInclude(row(report, "alpha", "api"), { refusal: "endpoint_unverified" })
      assert.strictEqual(row(report, "alpha", "api").evidence.endpoint_probes[0]?.result, "unverified")
      assert.strictEqual(hosts.commands.length, before)
    }).pipe(Effect.provide(layer))
  })
})

/** Three failed units on alpha and beta: three ensures wanted. */
const threeFailed = (hosts: MemoryHostUnits) =>
  Effect.gen(function* () {
    yield* healthyFleet(hosts)
    for (const [target, name] of [
      ["alpha", "api"],
      ["beta", "worker"]
    ] as const) {
      const decl = declaration(target, name)
      const host = hosts.host(target)
      host.set(decl.unit, {
        ...(yield* host.manager.inspect(decl)),
        active_state: "failed",
        main_pid: 0,
        process: null
      })
    }
    const alpha = hosts.host("alpha")
    const beacon = declaration("alpha", "beacon")
    alpha.set(beacon.unit, { ...(yield* alpha.manager.inspect(beacon)), active_state: "failed" })
    yield* publishBeacon(hosts, "alpha")
    yield* publishBeacon(hosts, "beta")
  })

describe("modes and bounds", () => {
  it.effect("Report mode records the plan and runs no host command at all", () => {
    const { hosts, layer } = setup({ autonomy_mode: "report" })
    return Effect.gen(function* () {
      yield* threeFailed(hosts)
      const before = [...hosts.commands]
      const report = yield* tick
      assert.strictEqual(report.mode, "report")
      assert.deepStrictEqual(
        report.services.filter((s) => s.execution.status === "planned").map((s) => `${s.target}/${s.name}`),
        ["alpha/api", "alpha/beacon", "beta/worker"]
      )
      assert.strictEqual(report.actions_executed, 0)
      assert.deepStrictEqual(hosts.commands, before, "the recorded command stream is unchanged")
    }).pipe(Effect.provide(layer))
  })

  it.effect("EnforceSafe repairs units that exist (restart, kick, reassert) and never creates one", () => {
    const { hosts, layer } = setup({ autonomy_mode: "enforce-safe" })
    return Effect.gen(function* () {
      yield* threeFailed(hosts)
      const fresh = makeMemoryHostUnits()
      yield* publishBeacon(fresh, "beta") // beta's worker reported absent: creating it is EnforceOwned's
      const report = yield* tick
      assert.deepInclude(row(report, "alpha", "api").execution, { status: "succeeded", change: "restarted" })
      assert.deepInclude(row(report, "alpha", "beacon").execution, { status: "succeeded", change: "reasserted" })
      assert.deepInclude(row(report, "beta", "worker").execution, {
        status: "skipped",
        skipped_because: "not_allowed_in_mode"
      })
    }).pipe(Effect.provide(layer))
  })

  it.effect("max_actions_per_tick bounds the actions; the rest wait for the next tick", () => {
    const { hosts, layer } = setup({ max_actions_per_tick: 2 })
    return Effect.gen(function* () {
      yield* threeFailed(hosts)
      const report = yield* tick
      assert.strictEqual(report.actions_executed, 2)
      assert.deepInclude(row(report, "beta", "worker").execution, {
        status: "skipped",
        skipped_because: "budget_exhausted"
      })
      yield* publishBeacon(hosts, "alpha")
      yield* publishBeacon(hosts, "beta")
      const next = yield* tick
      assert.deepInclude(row(next, "beta", "worker").execution, { status: "succeeded" })
    }).pipe(Effect.provide(layer))
  })

  it.effect("the emergency pause holds every mutation, across processes (SQL), until resumed", () => {
    const { hosts, layer } = setup()
    return Effect.gen(function* () {
      yield* threeFailed(hosts)
      const control = yield* AutonomyControl
      yield* control.setPause(true, "ops", "incident 42")
      const before = hosts.commands.length
      const paused = yield* tick
      assert.deepInclude(paused.pause, { paused: true, reason: "incident 42", changed_by: "ops" })
      assert.isTrue(
        paused.services
          .filter((s) => s.execution.status === "skipped")
          .every((s) => s.execution.skipped_because === "paused")
      )
      assert.strictEqual(hosts.commands.length, before)
      yield* control.setPause(false, "ops", null)
      const resumed = yield* tick
      assert.strictEqual(resumed.actions_executed, 3)
    }).pipe(Effect.provide(layer))
  })

  it.effect(
    "the breaker: N host failures open it, refusals never count, half-open after the cool-down, closed by a success",
    () => {
      const { hosts, layer } = setup({ breaker_failures: 2, breaker_cooldown_seconds: 600 })
      return Effect.gen(function* () {
        yield* threeFailed(hosts)
        const control = yield* AutonomyControl
        const policy = { failures: 2, cooldownSeconds: 600 }
        // alpha's beacon unit runs again (a reassert that succeeds would close the breaker: a host success).
        const alphaHost = hosts.host("alpha")
        const beaconUnit = declaration("alpha", "beacon")
        alphaHost.set(beaconUnit.unit, { ...(yield* alphaHost.manager.inspect(beaconUnit)), active_state: "inactive" })
        // Refusals (identity_unresolved on beta) never feed it, tick after tick.
        const beta = hosts.host("beta")
        const worker = declaration("beta", "worker")
        beta.set(worker.unit, {
          ...(yield* beta.manager.inspect(worker)),
          active_state: "active",
          process: { pid: 5, executable: "/bin/sh", sha256: SHA_B }
        })
        yield* publishBeacon(hosts, "beta")
        for (let i = 0; i < 3; i++) yield* tick.pipe(Effect.zipLeft(publishBeacon(hosts, "alpha")))
        assert.strictEqual((yield* control.breaker("beta", policy)).failures, 0)

        // Two restarts that fail on alpha open alpha's breaker.
        const alpha = hosts.host("alpha")
        const api = declaration("alpha", "api")
        alpha.set(api.unit, { ...(yield* alpha.manager.inspect(api)), active_state: "failed" })
        yield* publishBeacon(hosts, "alpha")
        alpha.failNext("restart keel-api.service")
        const first = yield* tick
        assert.deepInclude(row(first, "alpha", "api").execution, { status: "failed", feeds_breaker: true })
        alpha.failNext("restart keel-api.service")
        yield* tick
        assert.strictEqual((yield* control.breaker("alpha", policy)).phase, "open")
        const held = yield* tick
        assert.deepInclude(row(held, "alpha", "api").execution, { status: "skipped", skipped_because: "breaker_open" })

        // After the cool-down one trial goes through; its success closes the breaker.
        yield* TestClock.adjust("601 seconds")
        yield* publishBeacon(hosts, "alpha")
        assert.strictEqual((yield* control.breaker("alpha", policy)).phase, "half_open")
        const trial = yield* tick
        assert.deepInclude(row(trial, "alpha", "api").execution, { status: "succeeded" })
        assert.deepInclude(yield* control.breaker("alpha", policy), { phase: "closed", failures: 0 })
      }).pipe(Effect.provide(layer))
    }
  )

  it.effect("a rejected preflight changes nothing on the host and does not feed the breaker", () => {
    const { hosts, layer } = setup({ breaker_failures: 1 })
    return Effect.gen(function* () {
      yield* healthyFleet(hosts)
      const alpha = hosts.host("alpha")
      const api = declaration("alpha", "api")
      alpha.setFile(api.unit, "[Service]\nExecStart=/opt/old\n") // someone edited the unit: ensure must reload it
      alpha.set(api.unit, { ...(yield* alpha.manager.inspect(api)), active_state: "failed" })
      alpha.rejectPreflight(api.unit)
      yield* publishBeacon(hosts, "alpha")
      const report = yield* tick
      assert.deepInclude(row(report, "alpha", "api").execution, { status: "failed", feeds_breaker: false })
      assert.match(row(report, "alpha", "api").execution.error ?? "", /^UnitPreflightRejected/)
      assert.strictEqual(alpha.file(api.unit), "[Service]\nExecStart=/opt/old\n")
      assert.strictEqual(
        (yield* (yield* AutonomyControl).breaker("alpha", { failures: 1, cooldownSeconds: 60 })).phase,
        "closed"
      )
    }).pipe(Effect.provide(layer))
  })
})

describe("leases", () => {
  it.effect("a service whose lease another process holds is not touched; one tick fleet-wide at a time", () => {
    const { hosts, layer } = setup()
    return Effect.gen(function* () {
      yield* threeFailed(hosts)
      const leases = yield* Leases
      yield* leases.acquire(serviceLeaseKey("alpha", "api"), "other-process", "5 minutes")
      const report = yield* tick
      assert.deepInclude(row(report, "alpha", "api").execution, { status: "skipped", skipped_because: "lease_held" })
      assert.notInclude(hosts.commands, "alpha: restart keel-api.service")

      yield* leases.acquire("autonomy:tick", "other-process", "5 minutes")
      const refused = yield* Effect.flip(tick)
      assert.deepInclude(refused, { _tag: "TickInProgress", holder: "other-process" })
    }).pipe(Effect.provide(layer))
  })

  it.effect(
    "two reconcilers (two processes' instances on one database) ticking at once mutate each service once",
    () => {
      const { hosts, layer } = setup()
      return Effect.gen(function* () {
        yield* threeFailed(hosts)
        const context = yield* Effect.context<never>()
        const second = yield* Layer.build(Layer.fresh(ServiceReconciler.Default)).pipe(
          Effect.provide(context as Context.Context<never>)
        )
        const other = Context.get(second, ServiceReconciler)
        const mine = yield* ServiceReconciler
        assert.notStrictEqual(mine.holder, other.holder)
        const before = hosts.commands.length
        const outcomes = yield* Effect.all(
          [Effect.either(mine.tick("scheduled")), Effect.either(other.tick("scheduled"))],
          {
            concurrency: "unbounded"
          }
        )
        const ran = outcomes.filter((o) => o._tag === "Right")
        assert.isAtLeast(ran.length, 1)
        const restarts = hosts.commands
          .slice(before)
          .filter((c) => c.includes("restart") || c.includes("start keel-beacon.timer"))
        assert.deepStrictEqual(restarts.toSorted(), [
          "alpha: restart keel-api.service",
          "alpha: start keel-beacon.timer",
          "beta: restart keel-worker.service"
        ])
      }).pipe(Effect.scoped, Effect.provide(layer))
    }
  )
})

describe("acting on evidence older than the host", () => {
  it.effect("a repair the host no longer needs (another run fixed it since the beacon) is not carried out", () => {
    const { hosts, layer } = setup()
    return Effect.gen(function* () {
      yield* threeFailed(hosts) // the beacons say failed…
      const alpha = hosts.host("alpha")
      const api = declaration("alpha", "api")
      yield* alpha.manager.ensure(renderUnit(api, "linux")) // …but alpha's api runs again
      const before = hosts.commands.length
      const report = yield* tick
      assert.deepInclude(row(report, "alpha", "api").execution, {
        status: "skipped",
        skipped_because: "resolved_on_host"
      })
      assert.notInclude(hosts.commands.slice(before), "alpha: restart keel-api.service")
      assert.include(hosts.commands.slice(before), "beta: restart keel-worker.service", "the others are still repaired")
    }).pipe(Effect.provide(layer))
  })
})

describe("a tick run again (the autonomy singleton restarted on another runner, docs/cluster.md)", () => {
  it.effect("on the same beacons it restarts nothing the first tick restarted and raises no alert again", () => {
    const { hosts, alerts, layer } = setup()
    return Effect.gen(function* () {
      yield* threeFailed(hosts)
      const first = yield* tick
      assert.deepInclude(row(first, "alpha", "api").execution, { status: "succeeded", change: "restarted" })
      assert.deepInclude(row(first, "beta", "worker").execution, { status: "succeeded", change: "restarted" })
      const before = hosts.commands.length
      const raised = alerts.raised.length
      // The beacons still say failed: only the host, read again under the service's lease, says otherwise.
      const second = yield* tick
      for (const [target, name] of [
        ["alpha", "api"],
        ["beta", "worker"]
      ] as const)
        assert.deepInclude(row(second, target, name).execution, {
          status: "skipped",
          skipped_because: "resolved_on_host"
        })
      // What it does run again asserts a state (the beacon's timer enabled and started), a no-op on the host.
      assert.deepStrictEqual(hosts.commands.slice(before), [
        "alpha: enable keel-beacon.timer",
        "alpha: start keel-beacon.timer"
      ])
      assert.strictEqual(alerts.raised.length, raised)
    }).pipe(Effect.provide(layer))
  })
})

describe("alerts", () => {
  it.effect(
    "once on the transition to identity_unresolved and endpoint_unverified, every tick while declaration_incomplete holds",
    () => {
      const { hosts, alerts, layer } = setup()
      return Effect.gen(function* () {
        yield* healthyFleet(hosts)
        const beta = hosts.host("beta")
        const worker = declaration("beta", "worker")
        beta.set(worker.unit, {
          ...(yield* beta.manager.inspect(worker)),
          process: { pid: 5, executable: "/bin/sh", sha256: SHA_B }
        })
        yield* publishBeacon(hosts, "beta")
        yield* publishBeacon(hosts, "alpha", { omit: ["api"] })
        hosts.setEndpoint("beta", "http://alpha.internal:8080/health", "channel_fails")
        const objects = yield* ObjectGateway
        const beacon = Option.getOrThrow(yield* objects.getJson(beaconKey("alpha"))) as {
          units: Array<{ name: string }>
        }
        const absent = yield* makeMemoryHostUnits()
          .host("alpha")
          .manager.inspect({ name: "legacy", unit: "/etc/systemd/system/legacy.service" })
        const withoutLegacy = { ...beacon, units: beacon.units.map((u) => (u.name === "legacy" ? absent : u)) }
        yield* objects.putJson(beaconKey("alpha"), withoutLegacy)
        const first = yield* tick
        const second = yield* tick
        const kinds = (report: ServiceReport) =>
          report.alerts.map((a) => `${a.kind} ${a.target}/${a.service} ${a.delivery}`).sort()
        assert.deepStrictEqual(kinds(first), [
          "declaration_incomplete alpha/legacy repeated",
          "endpoint_unverified alpha/api once",
          "identity_unresolved beta/worker once"
        ])
        assert.deepStrictEqual(kinds(second), ["declaration_incomplete alpha/legacy repeated"])
        assert.lengthOf(alerts.raised, 4)
      }).pipe(Effect.provide(layer))
    }
  )
})

describe("the scheduled tick of ctl serve", () => {
  it.effect("runs a tick every autonomy_interval_seconds, the first one interval after start", () => {
    const { hosts, layer } = setup({ autonomy_interval_seconds: 60 })
    return Effect.gen(function* () {
      yield* healthyFleet(hosts)
      const objects = yield* ObjectGateway
      /** The tick runs on its own fiber: let it finish (at most 2 s), then read what it wrote. */
      const latestAfterTick = (previous: string | undefined) =>
        Effect.gen(function* () {
          for (let i = 0; i < 400; i++) {
            const found = yield* objects.getJson(LATEST_REPORT_KEY)
            if (Option.isSome(found) && (found.value as ServiceReport).run_id !== previous)
              return found.value as ServiceReport
            // The tick reads files (the registry): give the event loop a turn, in real time.
            yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))
          }
          return assert.fail("no scheduled tick wrote a report")
        })
      /** The schedule reads the registry (real I/O) before it sleeps: wait (at most 2 s) until it sleeps until `at`. */
      const sleepingUntil = (at: number) =>
        Effect.gen(function* () {
          for (let i = 0; i < 400; i++) {
            if (Chunk.some(yield* TestClock.sleeps(), (wake) => wake === at)) return
            yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))
          }
          return assert.fail(`the schedule never slept until ${at}`)
        })
      yield* Effect.gen(function* () {
        const start = yield* Clock.currentTimeMillis
        yield* sleepingUntil(start + 60_000)
        yield* TestClock.adjust("59 seconds")
        assert.isTrue(Option.isNone(yield* objects.getJson(LATEST_REPORT_KEY)), "not before the interval")
        yield* TestClock.adjust("1 second")
        const first = yield* latestAfterTick(undefined)
        assert.strictEqual(first.trigger, "scheduled")
        yield* sleepingUntil(start + 120_000)
        yield* TestClock.adjust("60 seconds")
        const second = yield* latestAfterTick(first.run_id)
        assert.strictEqual(second.trigger, "scheduled")
      }).pipe(
        // The loop the AutonomyScheduleLive singleton runs, forked here on the TestClock (the singleton's runner
        // would take its shard on the clock this test holds still).
        Effect.provide(Layer.scopedDiscard(Effect.forkScoped(autonomyTicks)))
      )
    }).pipe(Effect.provide(layer))
  })
})
