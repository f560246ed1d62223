import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, assert, describe, it } from "vitest"
import { postgresSkipReason } from "../support/pg-schema.js"
import { admin, runnersFixture, waitFor } from "../support/runners.js"
import { ctlBin, requestChild, root } from "../support/server.js"

// Issue 45's "two runners × 4 workers claim 500 jobs: each once" (docs/cluster.md, "What runs where"), with real
// processes on one PostgreSQL schema. A queue's workers do not attach to a runner: `ctl machine work` is a process
// of its own that claims from the shared `jobs` table (JobQueue.claim, `FOR UPDATE SKIP LOCKED` on PostgreSQL), so
// "4 workers per runner" is one `ctl machine work --concurrency 4` beside each of two `ctl serve` runners. The 500
// jobs are submitted through both runners' control-plane ports (POST /api/fleet/jobs) while the workers already
// claim. Proves, from the database and from the jobs' own effect: every job claimed once (attempt 1), run once (one
// output line, one line in a file every job appends to), finished once; `seq` unique; both worker processes took
// part. Bounded: every wait has a limit.
const children: Array<ChildProcess> = []
const schemas: Array<string> = []

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL")
  for (const schema of schemas) await admin(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined)
})

const JOBS = 500
const SLOTS = 4
const SENDERS = 8

describe.skipIf(postgresSkipReason !== undefined)("the job queue under two runners", () => {
  it("two runners × 4 workers claim 500 jobs: each claimed, run and finished once", async () => {
    const started = Date.now()
    const { schema, dir, shared, ctl, runner } = await runnersFixture(children, schemas, {
      KEEL_REGISTRY: path.join(root, "examples", "registry.yml")
    })
    // forge-2's pre-check gateway is the registry's job submitter; its grant covers forge-1 (a `local` target).
    const grantFile = path.join(dir, "gateway.grant")
    await ctl([
      "vault",
      "grant",
      "create",
      "--consumer",
      "gateway-forge-2",
      "--action",
      "job-submit",
      "--host",
      "forge-1",
      "--out",
      grantFile
    ])
    const servers = await Promise.all([0, 1].map((i) => runner(i, ["controlplane", "vault"])))
    const exchanged = await requestChild(servers[0]!.port, {
      method: "POST",
      path: "/v1/vault/token",
      body: JSON.parse(fs.readFileSync(grantFile, "utf8"))
    })
    assert.strictEqual(exchanged.status, 200, exchanged.body)
    const token = JSON.parse(exchanged.body).token as string

    const workerNames = servers.map((_, i) => `beside-runner-${i}`)
    const workers = workerNames.map((name) => {
      const log = fs.openSync(path.join(dir, `${name}.log`), "a")
      const worker = spawn(
        process.execPath,
        [ctlBin, "machine", "work", "--concurrency", String(SLOTS), "--worker", name],
        {
          cwd: root,
          env: { ...process.env, ...shared, KEEL_DATA_DIR: path.join(dir, name), KEEL_LOG_LEVEL: "warning" },
          stdio: ["ignore", log, log]
        }
      )
      children.push(worker)
      return worker
    })

    // Each job's own effect: its number appended to one file (O_APPEND, one short write) and printed once.
    const witness = path.join(dir, "ran.txt")
    let submitted = 0
    const send = async (sender: number) => {
      for (let i = sender; i < JOBS; i += SENDERS) {
        const answer = await requestChild(servers[i % 2]!.port, {
          method: "POST",
          path: "/api/fleet/jobs",
          headers: { authorization: `Bearer ${token}` },
          body: {
            kind: "claim-test",
            target: "forge-1",
            argv: ["sh", "-c", 'echo "$1" >> "$2" && echo "$1"', "job", `n${i}`, witness],
            idempotency_key: `claim-test-${i}`
          }
        })
        assert.strictEqual(answer.status, 202, answer.body)
        submitted++
      }
    }
    await Promise.all(Array.from({ length: SENDERS }, (_, sender) => send(sender)))
    assert.strictEqual(submitted, JOBS)
    const count = async (where: string) =>
      Number((await admin(`SELECT count(*) AS n FROM ${schema}.jobs WHERE ${where}`))[0]!.n)
    await waitFor("every job finished", async () => (await count("finished_at IS NOT NULL")) === JOBS, 300_000)
    for (const worker of workers) worker.kill("SIGTERM")
    await Promise.all(workers.map((w) => (w.exitCode === null ? new Promise((r) => w.once("exit", r)) : undefined)))

    // From the database: 500 jobs, numbered once each, each claimed by one attempt and succeeded.
    const jobs = await admin(`SELECT id, seq, argv, state, attempt, worker FROM ${schema}.jobs`)
    assert.strictEqual(jobs.length, JOBS)
    assert.strictEqual(new Set(jobs.map((job) => Number(job.seq))).size, JOBS)
    assert.deepStrictEqual(
      jobs.filter((job) => job.state !== "succeeded" || Number(job.attempt) !== 1).map((job) => job.id),
      [],
      "a job not succeeded at its first attempt"
    )
    const byWorker = new Map(workerNames.map((name) => [name, 0]))
    for (const job of jobs) byWorker.set(String(job.worker), (byWorker.get(String(job.worker)) ?? 0) + 1)
    assert.deepStrictEqual([...byWorker.keys()].sort(), [...workerNames].sort(), "only the two workers claimed")
    assert.isTrue(
      [...byWorker.values()].every((n) => n > 0),
      `both worker processes claimed: ${JSON.stringify([...byWorker])}`
    )
    // Run once: each job's output is the one line it printed, its own number.
    const output = await admin(
      `SELECT j.argv, count(o.line_no) AS lines, min(o.line) AS line
       FROM ${schema}.jobs j LEFT JOIN ${schema}.job_output o ON o.job_id = j.id GROUP BY j.id, j.argv`
    )
    const wrong = output.filter((row) => Number(row.lines) !== 1 || row.line !== JSON.parse(String(row.argv))[4])
    assert.deepStrictEqual(wrong, [], "a job whose output is not its one line")
    // And outside the database: the file every job appended to names each job exactly once.
    const ran = fs.readFileSync(witness, "utf8").trim().split("\n").sort()
    assert.deepStrictEqual(ran, Array.from({ length: JOBS }, (_, i) => `n${i}`).sort())
    console.log(
      `job claims: ${JOBS} jobs through two runners' ports, claimed ${[...byWorker.values()].join(" + ")} by two workers × ${SLOTS}, each once; ${((Date.now() - started) / 1000).toFixed(1)} s`
    )
  }, 400_000)
})
