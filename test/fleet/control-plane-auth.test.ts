import * as path from "node:path"
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { beaconDocument, vaultGrant } from "../support/controlplane.js"
import { HttpTest } from "../support/http.js"
import { root } from "../support/server.js"

// Issue 15: one authorization rule for every control-plane route, proved by one table — every route of the
// surface's OpenAPI document × (no token, expired, wrong action, wrong consumer, right).
// Issue 42: every route that names a host (in its path, query or body, or through the resource it names: a job,
// a probe run) also refuses a token whose grant holds the action for another host only.

const registryFile = path.join(root, "examples", "registry.yml")

type Method = "GET" | "HEAD" | "PUT" | "POST" | "DELETE"

const send = (method: Method, url: string, token: string | undefined, body?: string) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    let request = HttpClientRequest.make(method)(url).pipe(
      HttpClientRequest.setHeaders(token === undefined ? {} : { authorization: `Bearer ${token}` })
    )
    if (body !== undefined) request = HttpClientRequest.bodyText(request, body, "application/json")
    const response = yield* client.execute(request)
    const text = method === "HEAD" ? "" : yield* response.text
    let parsed: { code?: string; execution_id?: string } = {}
    try {
      parsed = JSON.parse(text)
    } catch {}
    return { status: response.status, code: parsed.code, body: parsed }
  }).pipe(Effect.scoped, Effect.orDie)

interface Route {
  /** The route as the OpenAPI document names it. */
  readonly route: string
  readonly method: Method
  readonly url: string
  readonly body?: string
  /** The consumer, action and host the right token is for. */
  readonly consumer: string
  readonly action: string
  readonly host?: string
  readonly ok: number
  /** An action the consumer's token carries that does not open the route (default service-ensure). */
  readonly wrong?: string
  /** How the route refuses every failed authorization, where it is one answer (the reconcile path: 401). */
  readonly denied?: string
}

layer(HttpTest({ surfaces: ["controlplane", "vault"], env: { KEEL_REGISTRY: registryFile } }), {
  timeout: "90 seconds",
  excludeTestServices: true
})("control-plane authorization", (it) => {
  it.effect("every route × (no token, expired, wrong action, wrong consumer, right)", () =>
    Effect.gen(function* () {
      const token = (consumer: string, actions: Array<string>, hosts: Array<string>, ttlMillis?: number) =>
        Effect.map(
          vaultGrant({ consumer, actions, hosts, ...(ttlMillis === undefined ? {} : { ttlMillis }) }),
          (g) => g.token
        )
      // Something to read, delete and poll.
      const ops = yield* token("ops", ["object-write", "fleet-read"], ["forge-1"])
      assert.strictEqual((yield* send("PUT", "/api/objects/state/auth/doc.json", ops, "{}")).status, 200)
      const started = yield* send(
        "POST",
        "/api/workflows/fleet-probe",
        ops,
        '{"host":"forge-1","request_id":"auth-run"}'
      )
      assert.strictEqual(started.status, 202)
      const executionId = started.body.execution_id ?? ""
      const gateway = yield* token("gateway-forge-2", ["job-submit"], ["forge-1"])
      const submitted = yield* send(
        "POST",
        "/api/fleet/jobs",
        gateway,
        '{"kind":"precheck","target":"forge-1","argv":["true"]}'
      )
      assert.strictEqual(submitted.status, 202)
      const jobId = (submitted.body as { id?: string }).id ?? ""
      const client = yield* HttpClient.HttpClient

      const routes: ReadonlyArray<Route> = [
        {
          route: "/api/host-health",
          method: "PUT",
          url: "/api/host-health",
          body: JSON.stringify(beaconDocument("forge-1", new Date(Date.now() - 60_000).toISOString())),
          consumer: "beacon-forge-1",
          action: "host-health-write",
          host: "forge-1",
          ok: 200
        },
        {
          route: "/api/objects",
          method: "GET",
          url: "/api/objects?prefix=state/auth/",
          consumer: "ops",
          action: "object-read",
          ok: 200
        },
        {
          route: "/api/objects/*",
          method: "GET",
          url: "/api/objects/state/auth/doc.json",
          consumer: "ops",
          action: "object-read",
          ok: 200
        },
        {
          route: "/api/objects/*",
          method: "HEAD",
          url: "/api/objects/state/auth/doc.json",
          consumer: "ops",
          action: "object-read",
          ok: 200
        },
        {
          route: "/api/objects/*",
          method: "PUT",
          url: "/api/objects/state/auth/doc.json",
          body: "{}",
          consumer: "ops",
          action: "object-write",
          ok: 200
        },
        {
          route: "/api/objects/*",
          method: "DELETE",
          url: "/api/objects/state/auth/doc.json",
          consumer: "ops",
          action: "object-write",
          ok: 204
        },
        {
          route: "/api/fleet/hosts",
          method: "GET",
          url: "/api/fleet/hosts",
          consumer: "dashboard",
          action: "fleet-read",
          ok: 200
        },
        {
          route: "/api/fleet/gates/{host}",
          method: "GET",
          url: "/api/fleet/gates/forge-1",
          consumer: "dashboard",
          action: "fleet-read",
          host: "forge-1",
          ok: 200
        },
        {
          route: "/api/fleet/overview",
          method: "GET",
          url: "/api/fleet/overview",
          consumer: "dashboard",
          action: "fleet-read",
          ok: 200
        },
        {
          route: "/api/fleet/services",
          method: "GET",
          url: "/api/fleet/services",
          consumer: "dashboard",
          action: "fleet-read",
          ok: 200
        },
        {
          route: "/api/fleet/services/runs/latest",
          method: "GET",
          url: "/api/fleet/services/runs/latest",
          consumer: "dashboard",
          action: "fleet-read",
          ok: 200
        },
        {
          route: "/api/fleet/services/runs",
          method: "POST",
          url: "/api/fleet/services/runs",
          consumer: "ops",
          action: "service-ensure",
          wrong: "fleet-read",
          ok: 200
        },
        {
          // The right token reaches the phase: Status of a transaction without a report is 503.
          route: "/api/host/storage-root-reconcile",
          method: "GET",
          url: "/api/host/storage-root-reconcile?target=forge-1&transaction=auth-t&phase=status",
          consumer: "dashboard",
          action: "storage-reconcile-read",
          host: "forge-1",
          ok: 503,
          wrong: "storage-reconcile-apply",
          denied: "STORAGE_RECONCILE_UNAUTHORIZED"
        },
        {
          // Finalize of a transaction that never ran: refused (exit_code 2), nothing changes.
          route: "/api/host/storage-root-reconcile",
          method: "POST",
          url: "/api/host/storage-root-reconcile?target=forge-1&transaction=auth-t&phase=finalize",
          consumer: "ops",
          action: "storage-reconcile-apply",
          host: "forge-1",
          ok: 200,
          wrong: "storage-reconcile-read",
          denied: "STORAGE_RECONCILE_UNAUTHORIZED"
        },
        {
          route: "/api/fleet/queue/targets/{target}/pause",
          method: "GET",
          url: "/api/fleet/queue/targets/forge-1/pause",
          consumer: "handoff-forge-1",
          action: "storage-queue",
          host: "forge-1",
          ok: 200
        },
        {
          route: "/api/fleet/queue/targets/{target}/pause",
          method: "PUT",
          url: "/api/fleet/queue/targets/forge-1/pause",
          body: '{"set":false}',
          consumer: "handoff-forge-1",
          action: "storage-queue",
          host: "forge-1",
          ok: 200
        },
        {
          route: "/api/fleet/queue/targets/{target}/drain",
          method: "POST",
          url: "/api/fleet/queue/targets/forge-1/drain",
          body: '{"transaction":"auth-t","timeout_seconds":0}',
          consumer: "handoff-forge-1",
          action: "storage-queue",
          host: "forge-1",
          ok: 200
        },
        {
          route: "/api/fleet/queue/targets/{target}/cancelled",
          method: "GET",
          url: "/api/fleet/queue/targets/forge-1/cancelled?transaction=auth-t",
          consumer: "handoff-forge-1",
          action: "storage-queue",
          host: "forge-1",
          ok: 200
        },
        {
          route: "/api/workflows/fleet-probe",
          method: "POST",
          url: "/api/workflows/fleet-probe",
          body: '{"host":"forge-1","request_id":"auth-run"}',
          consumer: "ops",
          action: "fleet-read",
          host: "forge-1",
          ok: 202
        },
        {
          route: "/api/workflows/fleet-probe/{execution_id}",
          method: "GET",
          url: `/api/workflows/fleet-probe/${executionId}`,
          consumer: "ops",
          action: "fleet-read",
          host: "forge-1",
          ok: 200
        },
        {
          route: "/api/fleet/jobs",
          method: "POST",
          url: "/api/fleet/jobs",
          body: '{"kind":"precheck","target":"forge-1","argv":["true"]}',
          consumer: "gateway-forge-2",
          action: "job-submit",
          host: "forge-1",
          ok: 202
        },
        {
          route: "/api/fleet/jobs",
          method: "GET",
          url: "/api/fleet/jobs?target=forge-1&state=running",
          consumer: "janitor-forge-1",
          action: "job-read",
          host: "forge-1",
          ok: 200,
          wrong: "job-submit"
        },
        {
          route: "/api/fleet/jobs/{id}",
          method: "GET",
          url: `/api/fleet/jobs/${jobId}`,
          consumer: "gateway-forge-2",
          action: "job-submit",
          host: "forge-1",
          ok: 200
        },
        // No such run: authorized, then 404 (the right token gets past authorization).
        {
          route: "/api/workflows/release-run",
          method: "POST",
          url: "/api/workflows/release-run",
          body: `{"run_id":"${"0".repeat(32)}"}`,
          consumer: "ops",
          action: "release-submit",
          ok: 404
        },
        {
          route: "/api/workflows/release-run/{run_id}",
          method: "GET",
          url: `/api/workflows/release-run/${"0".repeat(32)}`,
          consumer: "ops",
          action: "fleet-read",
          ok: 404
        }
      ]

      // The table covers every operation of the surface's OpenAPI document.
      const spec = yield* client.execute(HttpClientRequest.get("/docs/controlplane/openapi.json")).pipe(
        Effect.flatMap((r) => r.json),
        Effect.scoped,
        Effect.orDie
      )
      const documented = Object.entries((spec as { paths: Record<string, Record<string, unknown>> }).paths).flatMap(
        ([route, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${route}`)
      )
      assert.sameMembers(
        routes.map((r) => `${r.method} ${r.route}`),
        documented
      )

      // Every route naming a host in its path is in the host walk below; so are those naming one in a body or query.
      const hostRoutes = routes.filter((r) => r.host !== undefined).map((r) => `${r.method} ${r.route}`)
      for (const named of documented.filter((d) => /\{(host|target)\}/.test(d))) assert.include(hostRoutes, named)
      for (const named of [
        "PUT /api/host-health",
        "GET /api/fleet/gates/{host}",
        "POST /api/workflows/fleet-probe",
        "GET /api/workflows/fleet-probe/{execution_id}",
        "GET /api/host/storage-root-reconcile",
        "POST /api/host/storage-root-reconcile",
        "POST /api/fleet/jobs",
        "GET /api/fleet/jobs",
        "GET /api/fleet/jobs/{id}"
      ])
        assert.include(hostRoutes, named)

      for (const r of routes) {
        const hosts = r.host === undefined ? [] : [r.host]
        const expiring = yield* token(r.consumer, [r.action], hosts, 200)
        const wrongAction = yield* token(r.consumer, [r.wrong ?? "service-ensure"], hosts)
        const stranger = yield* token("stranger", [r.action], hosts)
        const right = yield* token(r.consumer, [r.action], hosts)
        // The action, from the right consumer, for another host only.
        const otherHost = r.host === undefined ? undefined : yield* token(r.consumer, [r.action], ["forge-2"])
        yield* Effect.sleep("300 millis")
        const rows: Array<[string, string | undefined, number, string | undefined]> = [
          ["no token", undefined, 401, r.denied ?? "VAULT_DENIED"],
          ["expired", expiring, 401, r.denied ?? "VAULT_DENIED"],
          ["wrong action", wrongAction, r.denied === undefined ? 403 : 401, r.denied ?? "VAULT_FORBIDDEN"],
          ["wrong consumer", stranger, r.denied === undefined ? 403 : 401, r.denied ?? "ACTION_NOT_HELD"],
          ...(otherHost === undefined
            ? []
            : [
                ["another host", otherHost, r.denied === undefined ? 403 : 401, r.denied ?? "VAULT_FORBIDDEN"] as [
                  string,
                  string | undefined,
                  number,
                  string | undefined
                ]
              ]),
          ["right", right, r.ok, undefined]
        ]
        for (const [who, bearer, status, code] of rows) {
          const answer = yield* send(r.method, r.url, bearer, r.body)
          const what = `${r.method} ${r.url} × ${who}`
          assert.strictEqual(answer.status, status, what)
          if (code !== undefined && r.method !== "HEAD") assert.strictEqual(answer.code, code, what)
        }
      }

      // Issue 43: beacons and object reads are under FleetAuth too, so the credential is answered first — a request
      // without one is 401 even when it is malformed; the same request with the right token is the 400 it earns.
      const reader = yield* token("ops", ["object-read"], [])
      const beaconWriter = yield* token("beacon-forge-1", ["host-health-write"], ["forge-1"])
      const malformed: ReadonlyArray<[Method, string, string | undefined, string]> = [
        ["PUT", "/api/host-health", "{not json", beaconWriter],
        ["PUT", "/api/host-health", '{"host":"forge-1"}', beaconWriter],
        ["GET", "/api/objects?limit=5000", undefined, reader],
        ["GET", "/api/objects/state//doc.json", undefined, reader],
        ["HEAD", "/api/objects/state/a;b.json", undefined, reader]
      ]
      for (const [method, url, body, right] of malformed) {
        const anonymous = yield* send(method, url, undefined, body)
        assert.strictEqual(anonymous.status, 401, `${method} ${url} without a token`)
        if (method !== "HEAD") assert.strictEqual(anonymous.code, "VAULT_DENIED", `${method} ${url} without a token`)
        assert.strictEqual((yield* send(method, url, right, body)).status, 400, `${method} ${url} with the token`)
      }
    })
  )
})
