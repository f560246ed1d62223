import type { ChildProcess } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import * as Yaml from "yaml"
import { RUN_STEPS } from "../support/handoff.js"
import { manifestOf, manifestsEqual, planUnion } from "../support/keel.js"
import { testDatabaseEnv } from "../support/pg-datadir.js"
import { ctlBin, runCtl, runCtlOk, startServer } from "../support/server.js"
import { sshChannel, sshdAvailable, startSshd, type TestSshd } from "../support/sshd.js"

// Issue 18, the target-resident worker end to end: the control plane (`ctl serve`) authorizes the request and asks
// the target through its ssh channel; the target's `ctl host storage-root-reconcile --here` starts a detached
// worker that runs the transaction on the target's own engine, reaching the control plane only for its queue
// (the `storage-queue` endpoints, with the target's own grant). The worker is SIGKILLed mid-union; Resume starts
// another that goes on from the recorded steps. Then Finalize, and Status proves `complete`.

let sshd: TestSshd | undefined
const children: Array<ChildProcess> = []
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-handoff-remote-"))
const supervisorDir = path.join(dir, "remote-supervisor")

beforeAll(async () => {
  if (sshdAvailable) sshd = await startSshd()
}, 120_000) // a bound on a hang: sshd's start is slow on a loaded machine
afterAll(() => {
  for (const child of children) child.kill("SIGKILL")
  sshd?.stop()
  for (const file of fs.existsSync(supervisorDir) ? fs.readdirSync(supervisorDir) : [])
    if (file.endsWith(".run.json")) {
      const run = JSON.parse(fs.readFileSync(path.join(supervisorDir, file), "utf8")) as { supervisor_pid: number }
      try {
        process.kill(run.supervisor_pid, "SIGTERM")
      } catch {}
    }
})

const write = (root: string, relative: string, text: string) => {
  fs.mkdirSync(path.dirname(path.join(root, relative)), { recursive: true })
  fs.writeFileSync(path.join(root, relative), text)
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe.skipIf(!sshdAvailable)("the storage-root handoff on a target reached over ssh", () => {
  it("runs in a worker on the target, survives its SIGKILL through Resume, finalizes; a failed run rolls back", async () => {
    const a = path.join(dir, "roots", "a")
    const b = path.join(dir, "roots", "b")
    write(a, "objects/shared.json", "A")
    write(a, "objects/a-only/x.json", "a")
    write(b, "objects/shared.json", "B wins")
    write(b, "objects/b-only/deep/y.json", "b")
    fs.symlinkSync("shared.json", path.join(b, "objects/link"))
    const route = path.join(dir, "objects.route")
    fs.writeFileSync(route, `${b}\n`)
    const runtime = path.join(dir, "current")
    fs.symlinkSync(b, runtime)
    const writer = path.join(dir, "writer")
    fs.copyFileSync("/bin/sleep", writer)
    fs.chmodSync(writer, 0o755)
    const unit = path.join(dir, "units", "writer.service")
    fs.mkdirSync(path.dirname(unit))
    const expected = planUnion(await manifestOf(a), await manifestOf(b), "b").expected

    const registry = path.join(dir, "registry.yml")
    fs.writeFileSync(
      registry,
      Yaml.stringify({
        version: 1,
        actions: {
          "storage-reconcile-read": ["ops"],
          "storage-reconcile-apply": ["ops"],
          "storage-queue": ["handoff-remote-1"]
        },
        targets: [
          {
            name: "remote-1",
            os: "linux",
            channel: sshChannel(sshd!),
            services: [{ name: "writer", unit, program: writer, args: ["300"] }],
            storage: {
              roots: { a, b },
              route_file: route,
              writers: ["writer"],
              runtime: { kind: "symlink", path: runtime }
            }
          }
        ]
      })
    )
    const controlEnv = {
      KEEL_DATA_DIR: path.join(dir, "control-data"),
      KEEL_REGISTRY: registry,
      KEEL_HOST: "control",
      KEEL_DEMO_DATA: "false",
      KEEL_LOG_LEVEL: "warning",
      // The target's `ctl`, reached through sshd: a wrapper that reads the target's settings from a file.
      KEEL_REMOTE_CTL: path.join(dir, "remote-ctl.sh")
    }
    const ctl = (args: ReadonlyArray<string>, extra: Record<string, string> = {}, input?: string) =>
      runCtlOk(args, { ...process.env, ...controlEnv, ...extra }, input)
    await ctl(["vault", "item", "put", "fleet-ssh"], {}, JSON.stringify({ private_key: sshd!.clientKey }))
    const grant = (consumer: string, action: ReadonlyArray<string>, file: string) =>
      ctl([
        "vault",
        "grant",
        "create",
        "--consumer",
        consumer,
        ...action.flatMap((a) => ["--action", a]),
        "--host",
        "remote-1",
        "--out",
        path.join(dir, file)
      ])
    await grant("ops", ["storage-reconcile-read", "storage-reconcile-apply"], "ops.grant")
    await grant("handoff-remote-1", ["storage-queue"], "handoff.grant")
    // A job waiting on the target: the drain cancels it (nothing works the queue in this test).
    const waiting = JSON.parse(await ctl(["machine", "submit", "--json", "remote-1", "--", "true"])) as { id: string }

    const server = await startServer(
      [ctlBin, "serve", "--port", "0"],
      { ...controlEnv, KEEL_LOG_LEVEL: "info" },
      children
    )
    const url = `http://127.0.0.1:${server.port}`
    const remoteEnv: Record<string, string> = {
      KEEL_DATA_DIR: path.join(dir, "remote-data"),
      KEEL_REGISTRY: registry,
      KEEL_HOST: "remote-1",
      KEEL_SERVICE_MANAGER: "supervisor",
      KEEL_SUPERVISOR_DIR: supervisorDir,
      KEEL_LOG_LEVEL: "warning",
      KEEL_CONTROL_PLANE_URL: url,
      KEEL_HANDOFF_GRANT_FILE: path.join(dir, "handoff.grant"),
      // The first worker kills itself right after building the union (before the step is recorded).
      KEEL_FAULT_INJECTION: "1",
      KEEL_HANDOFF_CRASH_AT: "union",
      // Under test:pg the target's ctl, started by sshd, opens its data dir's PostgreSQL schema too (pg-datadir.ts).
      ...testDatabaseEnv()
    }
    fs.writeFileSync(
      path.join(dir, "remote.env"),
      Object.entries(remoteEnv)
        .map(([k, v]) => `${k}=${v}\n`)
        .join("")
    )
    fs.writeFileSync(
      path.join(dir, "remote-ctl.sh"),
      `#!/bin/sh\nset -a\n. ${path.join(dir, "remote.env")}\nset +a\nexec ${process.execPath} ${ctlBin} "$@"\n`,
      { mode: 0o755 }
    )
    // The writer runs on the target before the handoff (its own service manager).
    await ctl(["service", "ensure", "writer", "--here", "--json"], remoteEnv)

    const reconcile = async (transaction: string, phase: string, grant = "ops.grant") => {
      const result = await runCtl(
        ["host", "storage-root-reconcile", "remote-1", "--transaction", transaction, "--phase", phase, "--json"],
        {
          ...process.env,
          ...controlEnv,
          KEEL_CONTROL_PLANE_URL: url,
          KEEL_GRANT_FILE: path.join(dir, grant)
        }
      )
      return { code: result.code, answer: JSON.parse(result.stdout || "null"), stderr: result.stderr }
    }
    const handoffDir = path.join(dir, "remote-data", "handoff", "t1")
    // The waits below only bound a hang (3000 × 100 ms): a loaded machine is 5–10× slower.
    const workerGone = async () => {
      for (let i = 0; i < 3000; i++) {
        const pid = fs.existsSync(path.join(handoffDir, "worker.pid"))
          ? Number(fs.readFileSync(path.join(handoffDir, "worker.pid"), "utf8"))
          : 0
        if (pid === 0 || !alive(pid)) return
        await sleep(100)
      }
      throw new Error("the worker is still running")
    }

    // A refusal of the control plane: exit 1, one `{"error": …}` document with its code, one line on stderr.
    const denied = await reconcile("t1", "run", "handoff.grant")
    assert.strictEqual(denied.code, 1)
    assert.deepEqual(Object.keys(denied.answer), ["error"])
    assert.strictEqual(denied.answer.error.code, "STORAGE_RECONCILE_UNAUTHORIZED")
    assert.match(denied.stderr, /^ctl: STORAGE_RECONCILE_UNAUTHORIZED: .+\n$/)

    const accepted = await reconcile("t1", "run")
    assert.strictEqual(accepted.code, 0, accepted.stderr)
    assert.deepInclude(accepted.answer.report, { transaction: "t1", target: "remote-1", state: "running", attempt: 1 })
    // One transaction per target: the control plane's lock.
    const other = await reconcile("t2", "run")
    assert.strictEqual(other.code, 2)
    assert.strictEqual(other.answer.refusal, "transaction_in_progress")

    // The worker died at the union, before the engine recorded it. Status (read on the target) no longer says
    // running (issue 42 item 10): the worker is gone and Resume is needed; the receipt itself is unchanged.
    for (let i = 0; i < 3000 && !fs.existsSync(path.join(handoffDir, "crashed-at-union")); i++) await sleep(100)
    assert.isTrue(fs.existsSync(path.join(handoffDir, "crashed-at-union")), "the worker reached the union")
    await workerGone()
    const stalled = await reconcile("t1", "status")
    assert.strictEqual(stalled.code, 1, JSON.stringify(stalled.answer))
    assert.deepInclude(stalled.answer, { exit_code: 1, refusal: "worker_gone" })
    assert.deepInclude(stalled.answer.report, {
      transaction: "t1",
      phase: "run",
      state: "interrupted",
      worker: "gone",
      next_phase: "resume"
    })
    assert.include(stalled.answer.report.detail, "--phase resume")
    assert.strictEqual(JSON.parse(fs.readFileSync(path.join(handoffDir, "receipt.json"), "utf8")).state, "running")
    // Writes are fenced on the target meanwhile (the fence is a lease in the target's database).
    assert.include(await ctl(["lease", "list", "--json"], remoteEnv), "storage-fence")

    const resumed = await reconcile("t1", "resume")
    assert.strictEqual(resumed.code, 0, resumed.stderr)
    let status = await reconcile("t1", "status")
    for (let i = 0; i < 300 && status.answer.report.state === "running"; i++) {
      await sleep(100)
      status = await reconcile("t1", "status")
    }
    assert.strictEqual(status.answer.report.state, "activated_pending_lifecycle", JSON.stringify(status.answer))
    assert.deepEqual(
      status.answer.report.steps.map((s: { step: string }) => s.step),
      [...RUN_STEPS, "receipt"]
    )
    assert.strictEqual(status.answer.report.winner, "b")
    assert.deepEqual(status.answer.report.cancelled_jobs, [waiting.id])
    assert.isTrue(manifestsEqual(expected, await manifestOf(a)), "A holds the union")
    assert.strictEqual(fs.readFileSync(route, "utf8").trim(), a)
    assert.strictEqual(fs.readlinkSync(runtime), a)
    assert.notInclude(await ctl(["lease", "list", "--json"], remoteEnv), "storage-fence")

    const finalized = await reconcile("t1", "finalize")
    assert.strictEqual(finalized.code, 0, JSON.stringify(finalized.answer))
    assert.strictEqual(finalized.answer.report.state, "complete")
    assert.deepEqual(finalized.answer.report.finalize.retained_outcomes.cancelled_jobs, [
      { id: waiting.id, state: "cancelled", cancel_reason: "handoff_cancelled", transaction: "t1" }
    ])
    assert.deepInclude(finalized.answer.report.finalize.checks.queue, {
      expected: { set: false },
      actual: { set: false }
    })
    assert.deepEqual(finalized.answer.report.finalize.checks.writers, [{ name: "writer", active: true }])
    assert.strictEqual((await reconcile("t1", "status")).answer.report.state, "complete")
    // The transaction ended: the control plane lets the next one in (now A serves; it runs to its end).
    fs.writeFileSync(
      path.join(dir, "remote.env"),
      Object.entries(remoteEnv)
        .filter(([k]) => !k.startsWith("KEEL_FAULT") && !k.startsWith("KEEL_HANDOFF_CRASH"))
        .map(([k, v]) => `${k}=${v}\n`)
        .join("")
    )
    const next = await reconcile("t2", "run")
    assert.strictEqual(next.code, 0, JSON.stringify(next.answer))
    let second = await reconcile("t2", "status")
    for (let i = 0; i < 300 && second.answer.report.state === "running"; i++) {
      await sleep(100)
      second = await reconcile("t2", "status")
    }
    assert.deepInclude(second.answer.report, { state: "activated_pending_lifecycle", winner: "a", retained: [] })
    assert.isTrue(manifestsEqual(expected, await manifestOf(a)), "a second handoff with A serving changes nothing")
    assert.strictEqual((await reconcile("t2", "finalize")).answer.report.state, "complete")

    // A run that fails before its boundary is rolled back by another worker on the target, and the transaction ends.
    fs.writeFileSync(
      path.join(dir, "remote.env"),
      Object.entries({ ...remoteEnv, KEEL_HANDOFF_CRASH_AT: "", KEEL_HANDOFF_FAIL_AT: "checkpoint" })
        .map(([k, v]) => `${k}=${v}\n`)
        .join("")
    )
    assert.strictEqual((await reconcile("t3", "run")).code, 0)
    let failed = await reconcile("t3", "status")
    for (let i = 0; i < 300 && failed.answer.report.state === "running"; i++) {
      await sleep(100)
      failed = await reconcile("t3", "status")
    }
    assert.deepInclude(failed.answer, { exit_code: 1, refusal: "fault_injected" })
    assert.strictEqual((await reconcile("t4", "run")).answer.refusal, "transaction_in_progress")
    assert.strictEqual((await reconcile("t3", "rollback")).code, 0)
    let rolled = await reconcile("t3", "status")
    for (let i = 0; i < 300 && rolled.answer.report.state === "running"; i++) {
      await sleep(100)
      rolled = await reconcile("t3", "status")
    }
    assert.strictEqual(rolled.answer.report.state, "rolled_back", JSON.stringify(rolled.answer))
    assert.isTrue(manifestsEqual(expected, await manifestOf(a)), "A is back at its checkpoint")
    assert.notInclude(await ctl(["lease", "list", "--json"], remoteEnv), "storage-fence")
    assert.deepEqual(
      JSON.parse(await ctl(["machine", "status", "--json", waiting.id])).state,
      "cancelled",
      "the jobs t1 cancelled stay cancelled"
    )
    // A bound on a hang: some thirty ctl calls, each starting ctl here and on the target, 10–20 s apiece when loaded.
  }, 1_800_000)
})
