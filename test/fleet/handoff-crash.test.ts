import { type ChildProcess, execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import * as Yaml from "yaml"
import { ROLLBACK_STEPS, RUN_STEPS } from "../support/handoff.js"
import { manifestOf, manifestsEqual, planUnion } from "../support/keel.js"
import { cliOnPostgres } from "../support/pg-datadir.js"
import { ctlBin, requestChild, startServer } from "../support/server.js"

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
  return { dir, a, b, route, runtime, env, dataDir: env.KEEL_DATA_DIR as string, grant }
}

/** The ops grant for both actions, written by `ctl vault grant create` (run before the first server starts). */
const makeGrant = async (f: Fixture) => {
  const created = await ctlProcess(f.env, [
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
    f.grant
  ])
  assert.strictEqual(created.code, 0, created.stderr)
  return f
}

type Fixture = ReturnType<typeof fixture>

/**
 * The grant is made once, by `ctl`, in a data dir every test copies before its first server starts: a test's
 * own data dir then holds the same vault and grant as if `ctl vault grant create` had run in it (the grant names
 * the host and the actions, nothing of the test's paths), without a `ctl` process per test.
 */
let granted: Fixture
beforeAll(async () => {
  if (!cliOnPostgres) granted = await makeGrant(fixture())
}, 120_000)

const withGrant = async (f: Fixture) => {
  // Under test:pg the data dir's database is a PostgreSQL schema named after the data dir (pg-datadir.ts), which a
  // copy of the directory does not carry: there the test's own data dir gets its grant from `ctl`.
  if (cliOnPostgres) return makeGrant(f)
  fs.cpSync(granted.dataDir, f.dataDir, { recursive: true })
  fs.copyFileSync(granted.grant, f.grant)
  return f
}

/**
 * `ctl <args>` as a child process, awaited: never spawnSync, whose blocked event loop on a loaded machine starves
 * vitest's worker RPC (a fixed 60 s timeout) and fails the run with every test green.
 */
const ctlProcess = (env: Record<string, string>, args: ReadonlyArray<string>) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = execFile(
      process.execPath,
      [ctlBin, ...args],
      { env: { ...process.env, ...env }, encoding: "utf8", maxBuffer: 16 * 1024 * 1024 },
      (_error, stdout, stderr) => resolve({ code: child.exitCode, stdout, stderr })
    )
  })

const ctl = async (f: Fixture, port: number, transaction: string, phase: string) => {
  const result = await ctlProcess(
    {
      ...f.env,
      KEEL_LOG_LEVEL: "warning",
      KEEL_CONTROL_PLANE_URL: `http://127.0.0.1:${port}`,
      KEEL_GRANT_FILE: f.grant
    },
    ["host", "storage-root-reconcile", "box", "--transaction", transaction, "--phase", phase, "--json"]
  )
  try {
    return { code: result.code, answer: JSON.parse(result.stdout || "null") }
  } catch {
    throw new Error(`ctl --phase ${phase} printed no JSON (exit ${result.code}):\n${result.stdout}\n${result.stderr}`)
  }
}

const serve = (f: Fixture, extra: Record<string, string> = {}) =>
  startServer([ctlBin, "serve", "--port", "0"], { ...f.env, ...extra }, children)

/** A phase's answer (contracts/fleet/StorageHandoff.ts): what `ctl … --json` prints and exits with. */
interface PhaseAnswer {
  readonly exit_code?: number
  readonly refusal?: string | null
  readonly report?: { readonly state?: string; readonly winner?: string }
}

/**
 * The same request as `ctl … --phase P` makes, over HTTP from this process, each on a fresh connection: its
 * answer, or null when the server answered nothing usable. A server killed at its crash point may cut the
 * answer (or the token exchange) at any byte, and an idle keep-alive socket may be closed under a request on
 * a loaded machine: both are "no answer", never a test failure of their own.
 */
const phase = async (f: Fixture, port: number, transaction: string, name: string) => {
  try {
    const credential = JSON.parse(fs.readFileSync(f.grant, "utf8"))
    const exchanged = await requestChild(port, {
      method: "POST",
      path: "/v1/vault/token",
      body: { grant_id: credential.grant_id, consumer: credential.consumer, secret: credential.secret }
    })
    const { token } = JSON.parse(exchanged.body) as { token: string }
    const query = new URLSearchParams({ target: "box", transaction, phase: name })
    const response = await requestChild(port, {
      method: name === "status" ? "GET" : "POST",
      path: `/api/host/storage-root-reconcile?${query}`,
      headers: { authorization: `Bearer ${token}` }
    })
    return JSON.parse(response.body) as PhaseAnswer | null
  } catch {
    return null
  }
}

const exited = (child: ChildProcess) =>
  new Promise<void>((resolve) =>
    child.exitCode !== null || child.signalCode !== null ? resolve() : child.once("exit", () => resolve())
  )

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Sends the phase to a server armed to die at a step, until it died: the request that starts the work may be
 * cut by the crash it causes (no answer is expected), and one lost before the server read it is sent again.
 */
const phaseUntilKilled = async (f: Fixture, doomed: { child: ChildProcess; port: number }, name: string) => {
  const died = exited(doomed.child)
  for (let attempt = 0; attempt < 20 && doomed.child.exitCode === null && doomed.child.signalCode === null; attempt++) {
    await phase(f, doomed.port, "t", name)
    await Promise.race([died, pause(2_000)])
  }
  await died
}

/**
 * Status over HTTP until the phase stops running (at most 200 polls: a `ctl` process per poll costs seconds of
 * start-up): the first answer that is not "running". The uninterrupted test checks that `ctl … --phase status`
 * prints the same answer and exits with its code; the crash tests read the answer itself.
 */
const settled = async (f: Fixture, port: number, transaction: string) => {
  for (let i = 0; i < 200; i++) {
    const answer = await phase(f, port, transaction, "status")
    if (answer !== null && answer.report?.state !== "running") return answer
    await pause(100)
  }
  throw new Error(`${transaction} still running`)
}

/** What an uninterrupted run leaves: A as the planned union, route and runtime on A, the fence released. */
const assertActivated = async (f: Fixture, expected: ReturnType<typeof planUnion>, what: string) => {
  assert.isTrue(manifestsEqual(expected.expected, await manifestOf(f.a)), `${what}: A is the union`)
  assert.strictEqual(fs.readFileSync(f.route, "utf8").trim(), f.a, `${what}: route`)
  assert.strictEqual(fs.readlinkSync(f.runtime), f.a, `${what}: runtime`)
}

describe("a storage-root handoff survives a SIGKILL at every step", () => {
  it("uninterrupted: run, status, finalize through ctl, exit codes as the report's", async () => {
    const f = await withGrant(fixture())
    const expected = planUnion(await manifestOf(f.a), await manifestOf(f.b), "b")
    const server = await serve(f)
    const run = await ctl(f, server.port, "t", "run")
    assert.strictEqual(run.code, 0)
    const over = await settled(f, server.port, "t")
    const done = await ctl(f, server.port, "t", "status")
    assert.deepStrictEqual(done.answer, over, "ctl prints the phase's answer")
    assert.strictEqual(done.code, 0)
    assert.strictEqual(done.answer.report.state, "activated_pending_lifecycle")
    await assertActivated(f, expected, "uninterrupted")
    const other = await ctl(f, server.port, "t2", "run")
    assert.strictEqual(other.code, 2, "a concurrent transaction is refused")
    assert.strictEqual(other.answer.refusal, "transaction_in_progress")
    const final = await ctl(f, server.port, "t", "finalize")
    assert.strictEqual(final.code, 0)
    assert.strictEqual(final.answer.report.state, "complete")
    server.child.kill("SIGTERM")
    await exited(server.child)
  }, 300_000)

  for (const step of RUN_STEPS)
    it(`Run killed after ${step}: resumed, it ends as an uninterrupted run`, async () => {
      const f = await withGrant(fixture())
      const expected = planUnion(await manifestOf(f.a), await manifestOf(f.b), "b")
      const doomed = await serve(f, { KEEL_FAULT_INJECTION: "1", KEEL_HANDOFF_CRASH_AT: step })
      await phaseUntilKilled(f, doomed, "run")
      assert.strictEqual(doomed.child.signalCode, "SIGKILL", `the server died at ${step}`)
      const server = await serve(f)
      const resumed = await phase(f, server.port, "t", "resume")
      assert.strictEqual(resumed?.exit_code, 0, JSON.stringify(resumed))
      const done = await settled(f, server.port, "t")
      assert.strictEqual(done.report?.state, "activated_pending_lifecycle", JSON.stringify(done))
      assert.strictEqual(done.report?.winner, "b", "the winner is never reversed")
      await assertActivated(f, expected, step)
      const final = await phase(f, server.port, "t", "finalize")
      assert.strictEqual(final?.report?.state, "complete", JSON.stringify(final))
      server.child.kill("SIGTERM")
      await exited(server.child)
    }, 300_000)

  for (const step of ROLLBACK_STEPS)
    it(`Rollback killed after ${step}: rolled back again, A and the route are exactly as before`, async () => {
      const f = await withGrant(fixture())
      const before = await manifestOf(f.a)
      // The run fails right after it built the union on A (before the data-commit boundary), the fence held.
      const first = await serve(f, { KEEL_FAULT_INJECTION: "1", KEEL_HANDOFF_FAIL_AT: "union" })
      await phase(f, first.port, "t", "run")
      const failed = await settled(f, first.port, "t")
      assert.strictEqual(failed.report?.state, "failed")
      assert.strictEqual(failed.refusal, "fault_injected")
      assert.isFalse(manifestsEqual(before, await manifestOf(f.a)), "A holds the union")
      first.child.kill("SIGTERM")
      await exited(first.child)
      const doomed = await serve(f, { KEEL_FAULT_INJECTION: "1", KEEL_HANDOFF_CRASH_AT: step })
      await phaseUntilKilled(f, doomed, "rollback")
      assert.strictEqual(doomed.child.signalCode, "SIGKILL", `the server died at ${step}`)
      const server = await serve(f)
      await phase(f, server.port, "t", "rollback")
      const done = await settled(f, server.port, "t")
      assert.strictEqual(done.report?.state, "rolled_back", JSON.stringify(done))
      assert.isTrue(manifestsEqual(before, await manifestOf(f.a)), `${step}: A as it was`)
      assert.strictEqual(fs.readFileSync(f.route, "utf8").trim(), f.b)
      assert.strictEqual(fs.readlinkSync(f.runtime), f.b)
      // The transaction ended: another may run.
      assert.strictEqual((await phase(f, server.port, "t2", "run"))?.exit_code, 0)
      await settled(f, server.port, "t2")
      server.child.kill("SIGTERM")
      await exited(server.child)
    }, 300_000)
})
