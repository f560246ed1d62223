import { type ChildProcess, execFileSync, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { manifestOf, manifestsEqual, planUnion } from "keel"
import { afterAll, assert, describe, it } from "vitest"
import * as Yaml from "yaml"
import { ROLLBACK_STEPS, RUN_STEPS } from "../support/handoff.js"
import { ctlBin, startServer } from "../support/server.js"

// Issue 18, the handoff on real processes: `ctl serve` runs the workflows, `ctl host storage-root-reconcile` is
// the client. For every step of Run and of Rollback, the server is SIGKILLed right after the step did its work
// (before it was recorded: the step runs again), started again, and the phase resumed: the end state equals an
// uninterrupted run's — A's tree by manifest, the route, the runtime link, the queue, the fence — with one
// transaction only.

const children: Array<ChildProcess> = []
afterAll(() => {
  for (const child of children) child.kill("SIGKILL")
})

const write = (root: string, relative: string, text: string) => {
  fs.mkdirSync(path.dirname(path.join(root, relative)), { recursive: true })
  fs.writeFileSync(path.join(root, relative), text)
}

/** A target with two roots (B serving), its registry, a data dir, and an ops grant for both actions. */
const fixture = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-handoff-crash-"))
  const a = path.join(dir, "a")
  const b = path.join(dir, "b")
  write(a, "objects/shared.json", "A")
  write(a, "objects/a-only/x.json", "a")
  write(b, "objects/shared.json", "B wins")
  write(b, "objects/b-only/deep/y.json", "b")
  fs.mkdirSync(path.join(b, "empty"))
  fs.symlinkSync("shared.json", path.join(b, "objects/link"))
  const route = path.join(dir, "objects.route")
  fs.writeFileSync(route, `${b}\n`)
  const runtime = path.join(dir, "current")
  fs.symlinkSync(b, runtime)
  const registry = path.join(dir, "registry.yml")
  fs.writeFileSync(
    registry,
    Yaml.stringify({
      version: 1,
      actions: { "storage-reconcile-read": ["ops"], "storage-reconcile-apply": ["ops"] },
      targets: [
        {
          name: "box",
          os: "linux",
          channel: "local",
          storage: { roots: { a, b }, route_file: route, runtime: { kind: "symlink", path: runtime } }
        }
      ]
    })
  )
  const env: Record<string, string> = {
    KEEL_DATA_DIR: path.join(dir, "data"),
    KEEL_REGISTRY: registry,
    KEEL_DEMO_DATA: "false",
    KEEL_CLUSTER_POLL_INTERVAL: "200 millis"
  }
  const grant = path.join(dir, "ops.grant")
  execFileSync(
    process.execPath,
    [
      ctlBin,
      "vault",
      "grant",
      "create",
      "--consumer",
      "ops",
      "--action",
      "storage-reconcile-read",
      "--action",
      "storage-reconcile-apply",
      "--host",
      "box",
      "--out",
      grant
    ],
    { env: { ...process.env, ...env } }
  )
  return { dir, a, b, route, runtime, env, grant }
}

type Fixture = ReturnType<typeof fixture>

const ctl = (f: Fixture, port: number, transaction: string, phase: string) => {
  const result = spawnSync(
    process.execPath,
    [ctlBin, "host", "storage-root-reconcile", "box", "--transaction", transaction, "--phase", phase, "--json"],
    {
      env: {
        ...process.env,
        ...f.env,
        KEEL_LOG_LEVEL: "warning",
        KEEL_CONTROL_PLANE_URL: `http://127.0.0.1:${port}`,
        KEEL_GRANT_FILE: f.grant
      },
      encoding: "utf8"
    }
  )
  return { code: result.status, answer: JSON.parse(result.stdout || "null") }
}

const serve = (f: Fixture, extra: Record<string, string> = {}) =>
  startServer([ctlBin, "serve", "--port", "0"], { ...f.env, ...extra }, children)

/**
 * Status until the phase stops running (at most 20 s): polled over HTTP (a `ctl` process per poll costs ~2 s of
 * start-up on these machines), then answered once by `ctl … --phase status`, whose answer the tests check.
 */
/** The same request as `ctl … --phase P` makes, over HTTP from this process (its answer, or null). */
const phase = async (f: Fixture, port: number, transaction: string, name: string) => {
  const base = `http://127.0.0.1:${port}`
  const credential = JSON.parse(fs.readFileSync(f.grant, "utf8"))
  const exchanged = await fetch(`${base}/v1/vault/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ grant_id: credential.grant_id, consumer: credential.consumer, secret: credential.secret })
  })
  const { token } = (await exchanged.json()) as { token: string }
  const query = new URLSearchParams({ target: "box", transaction, phase: name })
  const response = await fetch(`${base}/api/host/storage-root-reconcile?${query}`, {
    method: name === "status" ? "GET" : "POST",
    headers: { authorization: `Bearer ${token}` }
  }).catch(() => null) // a server killed mid-request (the fault injected) answers nothing
  return response === null
    ? null
    : ((await response.json().catch(() => null)) as { report?: { state?: string } } | null)
}

const settled = async (f: Fixture, port: number, transaction: string) => {
  for (let i = 0; i < 200; i++) {
    const answer = await phase(f, port, transaction, "status")
    if (answer?.report?.state !== "running") return ctl(f, port, transaction, "status")
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`${transaction} still running`)
}

const exited = (child: ChildProcess) =>
  new Promise<void>((resolve) =>
    child.exitCode !== null || child.signalCode !== null ? resolve() : child.once("exit", () => resolve())
  )

/** What an uninterrupted run leaves: A as the planned union, route and runtime on A, the fence released. */
const assertActivated = async (f: Fixture, expected: ReturnType<typeof planUnion>, what: string) => {
  assert.isTrue(manifestsEqual(expected.expected, await manifestOf(f.a)), `${what}: A is the union`)
  assert.strictEqual(fs.readFileSync(f.route, "utf8").trim(), f.a, `${what}: route`)
  assert.strictEqual(fs.readlinkSync(f.runtime), f.a, `${what}: runtime`)
}

describe("a storage-root handoff survives a SIGKILL at every step", () => {
  it("uninterrupted: run, status, finalize through ctl, exit codes as the report's", async () => {
    const f = fixture()
    const expected = planUnion(await manifestOf(f.a), await manifestOf(f.b), "b")
    const server = await serve(f)
    const run = ctl(f, server.port, "t", "run")
    assert.strictEqual(run.code, 0)
    const done = await settled(f, server.port, "t")
    assert.strictEqual(done.answer.report.state, "activated_pending_lifecycle")
    await assertActivated(f, expected, "uninterrupted")
    const other = ctl(f, server.port, "t2", "run")
    assert.strictEqual(other.code, 2, "a concurrent transaction is refused")
    assert.strictEqual(other.answer.refusal, "transaction_in_progress")
    const final = ctl(f, server.port, "t", "finalize")
    assert.strictEqual(final.code, 0)
    assert.strictEqual(final.answer.report.state, "complete")
    server.child.kill("SIGTERM")
    await exited(server.child)
  }, 60_000)

  for (const step of RUN_STEPS)
    it(`Run killed after ${step}: resumed, it ends as an uninterrupted run`, async () => {
      const f = fixture()
      const expected = planUnion(await manifestOf(f.a), await manifestOf(f.b), "b")
      const doomed = await serve(f, { KEEL_FAULT_INJECTION: "1", KEEL_HANDOFF_CRASH_AT: step })
      await phase(f, doomed.port, "t", "run")
      await exited(doomed.child)
      assert.strictEqual(doomed.child.signalCode, "SIGKILL", `the server died at ${step}`)
      const server = await serve(f)
      const resumed = ctl(f, server.port, "t", "resume")
      assert.oneOf(resumed.code, [0], JSON.stringify(resumed.answer))
      const done = await settled(f, server.port, "t")
      assert.strictEqual(done.answer.report.state, "activated_pending_lifecycle", JSON.stringify(done.answer))
      assert.strictEqual(done.answer.report.winner, "b", "the winner is never reversed")
      await assertActivated(f, expected, step)
      const final = ctl(f, server.port, "t", "finalize")
      assert.strictEqual(final.answer.report.state, "complete", JSON.stringify(final.answer))
      server.child.kill("SIGTERM")
      await exited(server.child)
    }, 90_000)

  for (const step of ROLLBACK_STEPS)
    it(`Rollback killed after ${step}: rolled back again, A and the route are exactly as before`, async () => {
      const f = fixture()
      const before = await manifestOf(f.a)
      // The run fails right after it built the union on A (before the data-commit boundary), the fence held.
      const first = await serve(f, { KEEL_FAULT_INJECTION: "1", KEEL_HANDOFF_FAIL_AT: "union" })
      await phase(f, first.port, "t", "run")
      const failed = await settled(f, first.port, "t")
      assert.strictEqual(failed.answer.report.state, "failed")
      assert.strictEqual(failed.answer.refusal, "fault_injected")
      assert.isFalse(manifestsEqual(before, await manifestOf(f.a)), "A holds the union")
      first.child.kill("SIGTERM")
      await exited(first.child)
      const doomed = await serve(f, { KEEL_FAULT_INJECTION: "1", KEEL_HANDOFF_CRASH_AT: step })
      await phase(f, doomed.port, "t", "rollback")
      await exited(doomed.child)
      assert.strictEqual(doomed.child.signalCode, "SIGKILL", `the server died at ${step}`)
      const server = await serve(f)
      await phase(f, server.port, "t", "rollback")
      const done = await settled(f, server.port, "t")
      assert.strictEqual(done.answer.report.state, "rolled_back", JSON.stringify(done.answer))
      assert.isTrue(manifestsEqual(before, await manifestOf(f.a)), `${step}: A as it was`)
      assert.strictEqual(fs.readFileSync(f.route, "utf8").trim(), f.b)
      assert.strictEqual(fs.readlinkSync(f.runtime), f.b)
      // The transaction ended: another may run.
      assert.strictEqual(ctl(f, server.port, "t2", "run").code, 0)
      await settled(f, server.port, "t2")
      server.child.kill("SIGTERM")
      await exited(server.child)
    }, 90_000)
})
