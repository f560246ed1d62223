import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Gates, Vault } from "keel"
import { HttpTest } from "../support/http.js"

// Issue 15, fleet reads over HTTP: what operators look at, from the same services as the CLI, authorized
// by fleet-read; the hosts' publications arrive through the object API.

const root = fileURLToPath(new URL("../..", import.meta.url))
const registryFile = path.join(root, "examples", "registry.yml")

const send = (method: "GET" | "PUT", url: string, token?: string, body?: unknown) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    let request = HttpClientRequest.make(method)(url).pipe(
      HttpClientRequest.setHeaders(token === undefined ? {} : { authorization: `Bearer ${token}` })
    )
    if (body !== undefined) request = HttpClientRequest.bodyUnsafeJson(request, body)
    const response = yield* client.execute(request)
    // biome-ignore lint/suspicious/noExplicitAny: answers checked field by field
    return { status: response.status, body: (yield* response.json) as any }
  }).pipe(Effect.scoped, Effect.orDie)

const tokenOf = (consumer: string, actions: Array<string>, hosts: Array<string> = []) =>
  Effect.gen(function* () {
    const vault = yield* Vault
    const { credential } = yield* vault.createGrant({ consumer, actions, items: [], hosts, ttlMillis: 3_600_000 })
    return (yield* vault.exchange(credential)).token
  }).pipe(Effect.orDie)

layer(HttpTest({ surfaces: ["controlplane", "vault"], env: { KEEL_REGISTRY: registryFile } }), {
  timeout: "60 seconds",
  excludeTestServices: true
})("fleet reads (/api/fleet)", (it) => {
  it.effect("hosts: every target with the beacon, capacity and janitor report it published", () =>
    Effect.gen(function* () {
      const dashboard = yield* tokenOf("dashboard", ["fleet-read"])
      const before = yield* send("GET", "/api/fleet/hosts", dashboard)
      assert.strictEqual(before.status, 200)
      assert.deepStrictEqual(
        before.body.hosts.map((h: { name: string }) => h.name),
        ["forge-1", "forge-2", "studio-mac"]
      )
      assert.deepStrictEqual(before.body.hosts[0].capacity, { state: "absent" })
      assert.strictEqual(before.body.registry.freshness, "current")

      // forge-1's agent publishes through the control plane: a beacon and its state objects.
      const agent = yield* tokenOf("beacon-forge-1", ["host-state-write"], ["forge-1"])
      const beaconWriter = yield* tokenOf("beacon-forge-1", ["host-health-write"], ["forge-1"])
      const reportedAt = new Date(Date.now() - 60_000).toISOString()
      const beacon = {
        schema: "keel.beacon/v1",
        host: "forge-1",
        os: "linux",
        reported_at: reportedAt,
        writer_version: "test",
        disks: [{ mount: "/", total_bytes: 1000, free_bytes: 400, available_bytes: 300, error: null }],
        units: []
      }
      assert.strictEqual((yield* send("PUT", "/api/host-health", beaconWriter, beacon)).status, 200)
      const capacity = {
        host: "forge-1",
        published_at: new Date().toISOString(),
        admitting: false,
        reason: "gpu slots full (4/4)",
        state: "saturated"
      }
      assert.strictEqual((yield* send("PUT", "/api/objects/state/capacity/forge-1.json", agent, capacity)).status, 200)
      const pass = { host: "forge-1", finished_at: new Date().toISOString(), freed_bytes: 0 }
      assert.strictEqual((yield* send("PUT", "/api/objects/state/janitor/forge-1.json", agent, pass)).status, 200)

      const after = yield* send("GET", "/api/fleet/hosts", dashboard)
      const forge1 = after.body.hosts[0]
      assert.strictEqual(forge1.beacon.state, "present")
      assert.isAtLeast(forge1.beacon.age_seconds, 59)
      assert.deepStrictEqual(forge1.capacity, { state: "present", document: capacity })
      assert.deepStrictEqual(forge1.janitor, { state: "present", document: pass })
      assert.strictEqual(after.body.hosts[1].beacon.state, "absent")

      // Gates reads the capacity the host published.
      const gates = yield* send("GET", "/api/fleet/gates/forge-1", dashboard)
      assert.strictEqual(gates.status, 200)
      assert.strictEqual(gates.body.pressure_source, "capacity_publication")
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
      const ops = yield* tokenOf("ops", ["fleet-read"])
      const overview = yield* send("GET", "/api/fleet/overview", ops)
      assert.strictEqual(overview.status, 200)
      for (const part of ["generated_at", "fleet", "queue", "quota", "billing"]) assert.property(overview.body, part)
    })
  )

  it.effect("every fleet read is authorized by fleet-read", () =>
    Effect.gen(function* () {
      const stranger = yield* tokenOf("stranger", ["fleet-read"])
      const wrongAction = yield* tokenOf("dashboard", ["object-read"])
      for (const url of ["/api/fleet/hosts", "/api/fleet/gates/forge-1", "/api/fleet/overview"]) {
        const none = yield* send("GET", url)
        assert.strictEqual(none.status, 401, url)
        assert.strictEqual(none.body.code, "VAULT_DENIED")
        const other = yield* send("GET", url, wrongAction)
        assert.strictEqual(other.status, 403, url)
        assert.strictEqual(other.body.code, "VAULT_FORBIDDEN")
        const notHeld = yield* send("GET", url, stranger)
        assert.strictEqual(notHeld.status, 403, url)
        assert.strictEqual(notHeld.body.code, "ACTION_NOT_HELD")
      }
    })
  )
})
