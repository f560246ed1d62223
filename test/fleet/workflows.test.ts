import { type ChildProcess, execFileSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { runCli } from "../support/cli.js"
import { sendJson, vaultToken } from "../support/controlplane.js"
import { HttpTest } from "../support/http.js"
import { ObjectStore } from "../support/keel.js"
import { ctlBin, root, startServer } from "../support/server.js"

// Issue 15, durable workflows in the server: FleetProbe (registry → reach → report) runs in `ctl serve` on the
// cluster's workflow engine, is started and inspected over HTTP (by `ctl fleet`), and survives kill -9.

const registryFile = path.join(root, "examples", "registry.yml")
const kernel = execFileSync("uname", ["-sr"]).toString().trim()

layer(HttpTest({ surfaces: ["controlplane", "vault"], env: { KEEL_REGISTRY: registryFile } }), {
  timeout: "60 seconds",
  excludeTestServices: true
})("FleetProbe over HTTP", (it) => {
  const finished = (token: string, executionId: string) =>
    Effect.gen(function* () {
      for (let i = 0; i < 200; i++) {
        const status = yield* sendJson("GET", `/api/workflows/fleet-probe/${executionId}`, token)
        if (status.body.state !== "running") return status
        yield* Effect.sleep("100 millis")
      }
      assert.fail(`${executionId} did not finish within 20 s`)
    })

  it.effect("a probe runs its three steps once each and answers its result; a request id attaches", () =>
    Effect.gen(function* () {
      const token = yield* vaultToken("ops", ["fleet-read"], ["forge-1"])
      const started = yield* sendJson("POST", "/api/workflows/fleet-probe", token, {
        host: "forge-1",
        request_id: "probe-1"
      })
      assert.strictEqual(started.status, 202)
      const again = yield* sendJson("POST", "/api/workflows/fleet-probe", token, {
        host: "forge-1",
        request_id: "probe-1"
      })
      assert.strictEqual(again.body.execution_id, started.body.execution_id)
      // The same request id for another host is another run: never an attachment to forge-1's (issue 42).
      const forge2 = yield* vaultToken("ops", ["fleet-read"], ["forge-2"])
      const other = yield* sendJson("POST", "/api/workflows/fleet-probe", forge2, {
        host: "forge-2",
        request_id: "probe-1"
      })
      assert.strictEqual(other.status, 202)
      assert.notStrictEqual(other.body.execution_id, started.body.execution_id)
      const peek = yield* sendJson("GET", `/api/workflows/fleet-probe/${started.body.execution_id}`, forge2)
      assert.strictEqual(peek.status, 403)
      assert.strictEqual(peek.body.code, "VAULT_FORBIDDEN")
      const done = yield* finished(token, started.body.execution_id)
      assert.strictEqual(done.body.state, "succeeded")
      assert.strictEqual(done.body.result.kernel, kernel)
      assert.strictEqual(done.body.result.host, "forge-1")
      const store = yield* ObjectStore
      const keys = (yield* store.list(`state/probes/${started.body.execution_id}/`).pipe(Effect.orDie)).map(
        (h) => h.key
      )
      for (const step of ["1-registry", "2-reach", "3-report"])
        assert.strictEqual(keys.filter((k) => k.includes(`/${step}.`)).length, 1, step)
      assert.include(keys, done.body.result.report_key)
    })
  )

  it.effect("a probe of a host the registry does not declare fails at its first step", () =>
    Effect.gen(function* () {
      const token = yield* vaultToken("ops", ["fleet-read"], ["forge-1", "ghost"])
      const started = yield* sendJson("POST", "/api/workflows/fleet-probe", token, { host: "ghost" })
      const done = yield* finished(token, started.body.execution_id)
      assert.strictEqual(done.body.state, "failed")
      assert.deepInclude(done.body.error, { code: "PROBE_FAILED", step: "registry" })
      const unknown = yield* sendJson("GET", "/api/workflows/fleet-probe/no-such-run", token)
      assert.strictEqual(unknown.status, 404)
      assert.strictEqual(unknown.body.code, "WORKFLOW_NOT_FOUND")
      // An id with whitespace around it (or anything else that is not 32 hex digits) names no run: 404, never a 500.
      for (const spelled of [`%20${started.body.execution_id}%20`, `${started.body.execution_id}%0A`, "%09"]) {
        const padded = yield* sendJson("GET", `/api/workflows/fleet-probe/${spelled}`, token)
        assert.strictEqual(padded.status, 404, spelled)
        assert.strictEqual(padded.body.code, "WORKFLOW_NOT_FOUND", spelled)
        assert.match(padded.body.detail, /32 hexadecimal digits/, spelled)
      }
      assert.strictEqual(
        (yield* sendJson("POST", "/api/workflows/fleet-probe", undefined, { host: "forge-1" })).status,
        401
      )
      const stranger = yield* vaultToken("stranger", ["fleet-read"], ["forge-1"])
      assert.strictEqual(
        (yield* sendJson("POST", "/api/workflows/fleet-probe", stranger, { host: "forge-1" })).status,
        403
      )
    })
  )
})

describe("FleetProbe survives kill -9 of the server", () => {
  const children: Array<ChildProcess> = []
  afterAll(() => {
    for (const child of children) child.kill("SIGKILL")
  })

  it.live(
    "killed after each step and restarted, it completes exactly once; `ctl fleet` started it over HTTP",
    () =>
      Effect.gen(function* () {
        const work = fs.mkdtempSync(path.join(os.tmpdir(), "keel-probe-crash-"))
        const env = {
          KEEL_DATA_DIR: path.join(work, "data"),
          KEEL_REGISTRY: registryFile,
          KEEL_VAULT_KEY: randomBytes(32).toString("base64"),
          KEEL_CLUSTER_POLL_INTERVAL: "200 millis",
          KEEL_DEMO_DATA: "false"
        }
        const grantFile = path.join(work, "ops-grant.json")
        const grant = yield* runCli(
          [
            "vault",
            "grant",
            "create",
            "--consumer",
            "ops",
            "--action",
            "fleet-read",
            "--host",
            "forge-1",
            "--out",
            grantFile
          ],
          env
        )
        assert.strictEqual(grant.exitCode, 0, grant.stderr)
        const serve = () => Effect.promise(() => startServer([ctlBin, "serve", "--port", "0"], { ...env }, children))
        let server = yield* serve()
        const client = (port: number) => ({
          ...env,
          KEEL_CONTROL_PLANE_URL: `http://127.0.0.1:${port}`,
          KEEL_GRANT_FILE: grantFile
        })
        const started = yield* runCli(
          ["fleet", "probe", "forge-1", "--pause-ms", "1500", "--request-id", "crash-1", "--json"],
          client(server.port)
        )
        assert.strictEqual(started.exitCode, 0, started.stderr)
        const executionId = JSON.parse(started.stdout).execution_id as string
        const probes = path.join(work, "data", "objects", "state", "probes", executionId)
        const witnesses = (step: string) =>
          fs.existsSync(probes) ? fs.readdirSync(probes).filter((name) => name.startsWith(`${step}.`)) : []
        const waitFor = (step: string) =>
          Effect.gen(function* () {
            for (let i = 0; i < 300 && witnesses(step).length === 0; i++) yield* Effect.sleep("100 millis")
            assert.isAbove(witnesses(step).length, 0, `${step} ran within 30 s`)
          })

        // Kill the server (SIGKILL) right after each step has run, and start it again.
        for (const step of ["1-registry", "2-reach", "3-report"]) {
          yield* waitFor(step)
          // The step's result is recorded just after its witness; the pause that follows leaves time for it.
          yield* Effect.sleep("300 millis")
          server.child.kill("SIGKILL")
          yield* Effect.promise(() => new Promise((resolve) => server.child.once("exit", resolve)))
          server = yield* serve()
        }

        let status: { state: string; result: { kernel: string } | null } = { state: "running", result: null }
        for (let i = 0; i < 300 && status.state === "running"; i++) {
          const polled = yield* runCli(["fleet", "probe-status", executionId, "--json"], client(server.port))
          status = JSON.parse(polled.stdout)
          if (status.state === "running") yield* Effect.sleep("200 millis")
        }
        assert.strictEqual(status.state, "succeeded")
        assert.strictEqual(status.result?.kernel, kernel)
        // Each step ran exactly once, across four server processes.
        for (const step of ["1-registry", "2-reach", "3-report"]) assert.lengthOf(witnesses(step), 1, step)
        const pids = new Set(
          ["1-registry", "2-reach", "3-report"].map(
            (step) => JSON.parse(fs.readFileSync(path.join(probes, witnesses(step)[0]!), "utf8")).pid as number
          )
        )
        assert.strictEqual(pids.size, 3, "each step ran in another server process")
        server.child.kill("SIGTERM")
      }),
    120_000
  )
})
