import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, layer } from "@effect/vitest"
import { Effect, Either, ParseResult, Schema } from "effect"
import { beaconDocument, sendJson, vaultToken } from "../support/controlplane.js"
import { HttpTest } from "../support/http.js"
import { FleetHostsContract, Gates, GatesContract, OverviewContract, ServicesContract } from "../support/keel.js"

// Issue 15, fleet reads over HTTP: what operators look at, from the same services as the CLI, authorized
// by fleet-read; the hosts' publications arrive through the object API.

/**
 * The answer is what the contract's shape describes (issue 43): it decodes with every key known to the shape, so
 * the OpenAPI document and the typed clients neither miss a field nor promise one the service does not write.
 */
const describes = <A, I>(shape: Schema.Schema<A, I>, body: unknown, what: string) => {
  const decoded = Schema.decodeUnknownEither(shape, { onExcessProperty: "error", errors: "all" })(body)
  assert.isTrue(
    Either.isRight(decoded),
    `${what}: ${Either.isLeft(decoded) ? ParseResult.TreeFormatter.formatErrorSync(decoded.left) : ""}`
  )
}

const root = fileURLToPath(new URL("../..", import.meta.url))
const registryFile = path.join(root, "examples", "registry.yml")

layer(HttpTest({ surfaces: ["controlplane", "vault"], env: { KEEL_REGISTRY: registryFile } }), {
  timeout: "60 seconds",
  excludeTestServices: true
})("fleet reads (/api/fleet)", (it) => {
  it.effect("hosts: every target with the beacon, capacity and janitor report it published", () =>
    Effect.gen(function* () {
      // Gates names a host: the grant covers it.
      const dashboard = yield* vaultToken("dashboard", ["fleet-read"], ["forge-1"])
      const before = yield* sendJson("GET", "/api/fleet/hosts", dashboard)
      assert.strictEqual(before.status, 200)
      assert.deepStrictEqual(
        before.body.hosts.map((h: { name: string }) => h.name),
        ["forge-1", "forge-2", "studio-mac"]
      )
      assert.deepStrictEqual(before.body.hosts[0].capacity, { state: "absent" })
      assert.strictEqual(before.body.registry.freshness, "current")

      // forge-1's agent publishes through the control plane: a beacon and its state objects.
      const agent = yield* vaultToken("beacon-forge-1", ["host-state-write"], ["forge-1"])
      const beaconWriter = yield* vaultToken("beacon-forge-1", ["host-health-write"], ["forge-1"])
      const reportedAt = new Date(Date.now() - 60_000).toISOString()
      const beacon = beaconDocument("forge-1", reportedAt)
      assert.strictEqual((yield* sendJson("PUT", "/api/host-health", beaconWriter, beacon)).status, 200)
      const capacity = {
        host: "forge-1",
        published_at: new Date().toISOString(),
        admitting: false,
        reason: "gpu slots full (4/4)",
        state: "saturated"
      }
      assert.strictEqual(
        (yield* sendJson("PUT", "/api/objects/state/capacity/forge-1.json", agent, capacity)).status,
        200
      )
      const pass = { host: "forge-1", finished_at: new Date().toISOString(), freed_bytes: 0 }
      assert.strictEqual((yield* sendJson("PUT", "/api/objects/state/janitor/forge-1.json", agent, pass)).status, 200)

      const after = yield* sendJson("GET", "/api/fleet/hosts", dashboard)
      const forge1 = after.body.hosts[0]
      describes(FleetHostsContract.FleetHostsReport, before.body, "GET /api/fleet/hosts (nothing published)")
      describes(FleetHostsContract.FleetHostsReport, after.body, "GET /api/fleet/hosts")
      assert.strictEqual(forge1.beacon.state, "present")
      assert.isAtLeast(forge1.beacon.age_seconds, 59)
      assert.deepStrictEqual(forge1.capacity, { state: "present", document: capacity })
      assert.deepStrictEqual(forge1.janitor, { state: "present", document: pass })
      assert.strictEqual(after.body.hosts[1].beacon.state, "absent")

      // Gates reads the capacity the host published.
      const gates = yield* sendJson("GET", "/api/fleet/gates/forge-1", dashboard)
      assert.strictEqual(gates.status, 200)
      assert.strictEqual(gates.body.pressure_source, "capacity_publication")
      describes(GatesContract.GatesReport, gates.body, "GET /api/fleet/gates/forge-1")
      assert.deepStrictEqual(gates.body.capacity.diagnostics, {
        reason: "gpu slots full (4/4)",
        state: "saturated",
        admitting: false
      })
      // The same JSON as `ctl host gates --json`: the same service, the same fields.
      const direct = yield* (yield* Gates).report("forge-1")
      assert.deepStrictEqual(Object.keys(gates.body).sort(), Object.keys(direct).sort())
      assert.strictEqual(gates.body.complete, direct.complete)
    })
  )

  it.effect("overview: fleet, queue, quota and billing", () =>
    Effect.gen(function* () {
      const ops = yield* vaultToken("ops", ["fleet-read"])
      const overview = yield* sendJson("GET", "/api/fleet/overview", ops)
      assert.strictEqual(overview.status, 200)
      for (const part of ["generated_at", "fleet", "queue", "quota", "billing"]) assert.property(overview.body, part)
      describes(OverviewContract.OverviewReport, overview.body, "GET /api/fleet/overview")
    })
  )

  it.effect("every fleet read is authorized by fleet-read", () =>
    Effect.gen(function* () {
      const stranger = yield* vaultToken("stranger", ["fleet-read"], ["forge-1"])
      const wrongAction = yield* vaultToken("dashboard", ["object-read"], ["forge-1"])
      for (const url of ["/api/fleet/hosts", "/api/fleet/gates/forge-1", "/api/fleet/overview"]) {
        const none = yield* sendJson("GET", url)
        assert.strictEqual(none.status, 401, url)
        assert.strictEqual(none.body.code, "VAULT_DENIED")
        const other = yield* sendJson("GET", url, wrongAction)
        assert.strictEqual(other.status, 403, url)
        assert.strictEqual(other.body.code, "VAULT_FORBIDDEN")
        const notHeld = yield* sendJson("GET", url, stranger)
        assert.strictEqual(notHeld.status, 403, url)
        assert.strictEqual(notHeld.body.code, "ACTION_NOT_HELD")
      }
    })
  )

  it.effect("services: a tick run through the control plane, then its listing and status (issue 17)", () =>
    Effect.gen(function* () {
      const dashboard = yield* vaultToken("dashboard", ["fleet-read"])
      const unchecked = yield* sendJson("GET", "/api/fleet/services", dashboard)
      assert.strictEqual(unchecked.status, 200)
      assert.deepInclude(unchecked.body.services[0], { target: "forge-1", name: "keel-api" })

      // `ctl optimize run` through the control plane: the example fleet is in Report mode.
      const ops = yield* vaultToken("ops", ["service-ensure"])
      describes(ServicesContract.ServiceListing, unchecked.body, "GET /api/fleet/services (unchecked)")
      const run = yield* sendJson("POST", "/api/fleet/services/runs", ops)
      describes(ServicesContract.ServiceReport, run.body, "POST /api/fleet/services/runs")
      assert.strictEqual(run.status, 200)
      assert.strictEqual(run.body.mode, "report")
      assert.strictEqual(run.body.actions_executed, 0)
      assert.strictEqual(run.body.report_keys.latest, "state/autonomy/services/latest.json")

      const listing = yield* sendJson("GET", "/api/fleet/services", dashboard)
      assert.strictEqual(listing.body.run_id, run.body.run_id)
      describes(ServicesContract.ServiceListing, listing.body, "GET /api/fleet/services")
      const recovery = listing.body.services.find((s: { name: string }) => s.name === "keel-recovery")
      assert.deepInclude(recovery, { target: "forge-2", state: "recovery_managed", action: "none" })
      const status = yield* sendJson("GET", "/api/fleet/services/runs/latest", dashboard)
      assert.strictEqual(status.status, 200)
      assert.deepInclude(status.body, { mode: "report", max_actions_per_tick: 5 })
      assert.strictEqual(status.body.latest.run_id, run.body.run_id)
      describes(ServicesContract.ReconcilerStatus, status.body, "GET /api/fleet/services/runs/latest")
      assert.isFalse(status.body.pause.paused)
    })
  )
})
