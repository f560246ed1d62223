import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Fiber, Layer, Option, TestClock } from "effect"
import { runCli } from "../support/cli.js"
import {
  diagnose,
  FailureTable,
  GcpProvider,
  HostChannelLive,
  JobQueue,
  JobWorker,
  ServicesLive,
  ServicesTest
} from "../support/keel.js"
import { onTestDatabase } from "../support/pg-datadir.js"

const root = fileURLToPath(new URL("../..", import.meta.url))
const logs = path.join(root, "test", "fixtures", "job-logs")
const registryFile = path.join(root, "examples", "registry.yml")

describe("failure diagnosis", () => {
  it("each of the ten fixture logs is diagnosed as its row; a log with none is unknown", () => {
    // Nine rows any job may show; the tenth (the preemptible GPU quota) is the gcp provider adapter's.
    assert.strictEqual(FailureTable.length, 9)
    for (const row of FailureTable) {
      const diagnosis = diagnose(fs.readFileSync(path.join(logs, `${row.id}.log`), "utf8"))
      assert.strictEqual(diagnosis.id, row.id)
      assert.strictEqual(diagnosis.cause, row.cause)
      assert.strictEqual(diagnosis.provider, null)
    }
    for (const row of GcpProvider.diagnostics) {
      const log = fs.readFileSync(path.join(logs, `${row.id}.log`), "utf8")
      assert.strictEqual(diagnose(log).id, "unknown", "a provider's diagnostic is not offered unless it is enabled")
      const enabled = diagnose(log, [GcpProvider])
      assert.strictEqual(enabled.id, row.id)
      assert.strictEqual(enabled.cause, row.cause)
      assert.strictEqual(enabled.provider, "gcp")
    }
    assert.strictEqual(diagnose(fs.readFileSync(path.join(logs, "unknown.log"), "utf8")).id, "unknown")
  })

  it("the first match by position in the output wins", () => {
    const output = "RuntimeError: Cannot set NUMBA_NUM_THREADS\n...\nHfHubHTTPError: 429"
    assert.strictEqual(diagnose(output).id, "numba_threads_late")
    assert.strictEqual(diagnose(`x\nHfHubHTTPError: 429\n${output}`).id, "hub_rate_limit")
  })
})

describe("the job queue", () => {
  it.effect("a claim is taken once; a lease that expires is reclaimed; a late worker cannot complete", () =>
    Effect.gen(function* () {
      const queue = yield* JobQueue
      const job = yield* queue.submit({ kind: "command", target: "forge-1", argv: ["true"] })
      const first = yield* queue.claim("worker-a", 1_000)
      assert.strictEqual(Option.getOrThrow(first).id, job.id)
      assert.isTrue(Option.isNone(yield* queue.claim("worker-b", 1_000)))
      yield* TestClock.adjust("2 seconds")
      const reclaimed = Option.getOrThrow(yield* queue.claim("worker-b", 1_000))
      assert.strictEqual(reclaimed.attempt, 2)
      assert.isFalse(yield* queue.complete(job.id, "worker-a", { exitCode: 0 }))
      assert.isTrue(yield* queue.complete(job.id, "worker-b", { exitCode: 0 }))
      assert.strictEqual((yield* queue.get(job.id)).state, "succeeded")
    }).pipe(Effect.provide(ServicesTest()))
  )

  it.effect("an idempotency key queues one job: the same submit answers it in any state, another is refused", () =>
    Effect.gen(function* () {
      const queue = yield* JobQueue
      const build = { kind: "command", target: "forge-1", argv: ["make", "release"], idempotencyKey: "run-1:linux-x64" }
      const first = yield* queue.submit(build)
      const again = yield* queue.submit(build)
      assert.strictEqual(again.id, first.id)
      assert.strictEqual(again.idempotencyKey, "run-1:linux-x64")
      yield* queue.claim("builder", 60_000)
      yield* queue.complete(first.id, "builder", { exitCode: 0 })
      // Finished: still the same job, never a rebuild.
      const afterwards = yield* queue.submit(build)
      assert.deepInclude(afterwards, { id: first.id, state: "succeeded" })
      const reused = yield* Effect.flip(queue.submit({ ...build, argv: ["make", "other"] }))
      assert.deepInclude(reused, { code: "JOB_KEY_REUSED", job: first.id })
      // Without a key every submit queues its own job.
      const plain = { kind: "command", target: "forge-1", argv: ["true"] }
      assert.notStrictEqual((yield* queue.submit(plain)).id, (yield* queue.submit(plain)).id)
      assert.strictEqual((yield* queue.stats).counts.queued, 2)
    }).pipe(Effect.provide(ServicesTest()))
  )

  it.effect("pause stops claims, resume restarts them; cancel takes only queued jobs; stats count by state", () =>
    Effect.gen(function* () {
      const queue = yield* JobQueue
      const a = yield* queue.submit({ kind: "command", target: "forge-1", argv: ["true"] })
      const b = yield* queue.submit({ kind: "command", target: "forge-1", argv: ["true"] })
      yield* queue.pause
      assert.isTrue(Option.isNone(yield* queue.claim("w", 60_000)))
      yield* queue.resume
      assert.strictEqual(Option.getOrThrow(yield* queue.claim("w", 60_000)).id, a.id)
      assert.isFalse(yield* queue.cancel(a.id))
      assert.isTrue(yield* queue.cancel(b.id))
      const stats = yield* queue.stats
      assert.deepStrictEqual(stats.counts, { queued: 0, running: 1, succeeded: 0, failed: 0, cancelled: 1 })
      assert.strictEqual((yield* Effect.flip(queue.get("job_nope")))._tag, "JobNotFound")
    }).pipe(Effect.provide(ServicesTest()))
  )

  it.live("drain pauses claims and returns once the running job has finished", () =>
    Effect.gen(function* () {
      const queue = yield* JobQueue
      const job = yield* queue.submit({ kind: "command", target: "forge-1", argv: ["true"] })
      yield* queue.claim("w", 60_000)
      yield* queue.submit({ kind: "command", target: "forge-1", argv: ["true"] })
      const draining = yield* Effect.fork(queue.drain(20))
      yield* Effect.sleep("100 millis")
      assert.isNull(draining.unsafePoll())
      assert.isTrue(Option.isNone(yield* queue.claim("other", 60_000))) // paused: the queued job waits
      yield* queue.complete(job.id, "w", { exitCode: 0 })
      yield* draining.await
      const stats = yield* queue.stats
      assert.isTrue(stats.paused)
      assert.deepStrictEqual([stats.counts.running, stats.counts.queued], [0, 1])
    }).pipe(Effect.provide(ServicesTest()))
  )

  it.live("a worker runs jobs on their target, stores ordered output, records exits; status diagnoses failures", () =>
    Effect.gen(function* () {
      const queue = yield* JobQueue
      const ok = yield* queue.submit({
        kind: "command",
        target: "forge-1",
        argv: ["sh", "-c", "for i in 1 2 3; do echo line $i; done"]
      })
      const bad = yield* queue.submit({
        kind: "command",
        target: "forge-1",
        argv: [
          "sh",
          "-c",
          "echo loading; echo 'huggingface_hub.utils._errors.HfHubHTTPError: 429 Too Many' >&2; exit 3"
        ]
      })
      const nowhere = yield* queue.submit({ kind: "command", target: "ghost", argv: ["true"] })
      const ran = yield* (yield* JobWorker).work({ worker: "w1", concurrency: 2, untilEmpty: true })
      assert.strictEqual(ran, 3)
      assert.strictEqual((yield* queue.get(ok.id)).state, "succeeded")
      const page = yield* queue.output(ok.id, 0, 2)
      assert.deepStrictEqual(
        page.lines.map((l) => l.line),
        ["line 1", "line 2"]
      )
      const rest = yield* queue.output(ok.id, page.next, 10)
      assert.deepStrictEqual(
        rest.lines.map((l) => l.line),
        ["line 3"]
      )
      const failed = yield* queue.get(bad.id)
      assert.strictEqual(failed.state, "failed")
      assert.strictEqual(failed.exitCode, 3)
      assert.strictEqual(diagnose(yield* queue.fullOutput(bad.id)).id, "hub_rate_limit")
      const ghost = yield* queue.get(nowhere.id)
      assert.strictEqual(ghost.state, "failed")
      assert.match(ghost.error ?? "", /not a target/)
    }).pipe(
      Effect.provide(
        JobWorker.Default.pipe(
          Layer.provideMerge(HostChannelLive),
          Layer.provideMerge(ServicesTest()),
          Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["KEEL_REGISTRY", registryFile]]))))
        )
      )
    )
  )
})

describe("a worker that loses its lease", () => {
  it.live("stops the job's process at once and writes nothing into the attempt that took over", () =>
    Effect.gen(function* () {
      const queue = yield* JobQueue
      const sql = yield* SqlClient.SqlClient
      const marks = fs.mkdtempSync(path.join(os.tmpdir(), "keel-lease-lost-"))
      const job = yield* queue.submit({
        kind: "command",
        target: "forge-1",
        argv: ["sh", "-c", `echo start; touch ${marks}/started; sleep 3; touch ${marks}/ended; echo end`]
      })
      const worker = yield* Effect.fork(
        (yield* JobWorker).work({ worker: "w-paused", concurrency: 1, untilEmpty: true })
      )
      for (let i = 0; i < 100 && !fs.existsSync(path.join(marks, "started")); i++) yield* Effect.sleep("50 millis")
      assert.isTrue(fs.existsSync(path.join(marks, "started")))
      // Another worker's attempt takes the job over (what a claim after an expired lease does).
      yield* sql`UPDATE jobs SET worker = 'w-new', attempt = attempt + 1 WHERE id = ${job.id}`
      yield* Fiber.join(worker)
      yield* Effect.sleep("3500 millis")
      assert.isFalse(fs.existsSync(path.join(marks, "ended")), "the old attempt's process was stopped")
      const after = yield* queue.get(job.id)
      assert.strictEqual(after.state, "running", "the new attempt's to finish, not the old worker's")
      const lines = (yield* queue.fullOutput(job.id)).split("\n").filter((l) => l !== "")
      assert.notInclude(lines, "end")
    }).pipe(
      Effect.provide(
        JobWorker.Default.pipe(
          Layer.provideMerge(HostChannelLive),
          Layer.provideMerge(ServicesTest()),
          Layer.provide(
            Layer.setConfigProvider(
              ConfigProvider.fromMap(
                new Map([
                  ["KEEL_REGISTRY", registryFile],
                  ["KEEL_JOB_LEASE", "1s"]
                ])
              )
            )
          )
        )
      )
    )
  )
})

describe("ctl machine", () => {
  it.live("submit, work, status with diagnosis, logs with a cursor", () =>
    Effect.gen(function* () {
      const env = {
        KEEL_DATA_DIR: path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-machine-")), "data"),
        KEEL_REGISTRY: registryFile
      }
      const submitted = yield* runCli(
        [
          "machine",
          "submit",
          "forge-1",
          "--json",
          "--",
          "sh",
          "-c",
          "echo a; echo b; echo 'Quota '\"'\"'PREEMPTIBLE_NVIDIA_T4_GPUS'\"'\"' exceeded'; exit 1"
        ],
        env
      )
      assert.strictEqual(submitted.exitCode, 0, submitted.stderr)
      const id = JSON.parse(submitted.stdout).id as string
      assert.strictEqual((yield* runCli(["machine", "work", "--until-empty"], env)).exitCode, 0)
      const status = JSON.parse((yield* runCli(["machine", "status", id, "--json"], env)).stdout)
      assert.strictEqual(status.state, "failed")
      assert.strictEqual(status.exit_code, 1)
      assert.strictEqual(status.diagnosis.id, "preemptible_gpu_quota")
      assert.strictEqual(status.diagnosis.provider, "gcp")
      assert.deepStrictEqual(status.diagnosis.profile, { name: "gpu-batch", providers: ["gcp"], error: null })
      // The registry's other profile enables no provider: the gcp adapter's diagnosis is not offered.
      const local = JSON.parse(
        (yield* runCli(["machine", "status", id, "--json"], { ...env, KEEL_PROFILE: "local" })).stdout
      )
      assert.strictEqual(local.diagnosis.id, "unknown")
      assert.deepStrictEqual(local.diagnosis.profile, { name: "local", providers: [], error: null })
      const page = JSON.parse(
        (yield* runCli(["machine", "logs", id, "--cursor", "1", "--limit", "1", "--json"], env)).stdout
      )
      assert.deepStrictEqual(
        page.lines.map((l: { line: string }) => l.line),
        ["b"]
      )
      assert.strictEqual(page.next_cursor, 2)
      assert.strictEqual((yield* runCli(["machine", "status", "job_missing"], env)).exitCode, 1)
      // Text output: the status has its timings; a logs page says where the next one starts (on stderr).
      const text = yield* runCli(["machine", "status", id], env)
      assert.match(text.stdout, /created .*, started .*, finished .* \(\d+\.\d s\)/)
      assert.include(text.stdout, "  diagnosis: preemptible_gpu_quota: regional preemptible GPU quota hit")
      assert.include(text.stdout, "  provider diagnostics: profile gpu-batch: gcp")
      const logsText = yield* runCli(["machine", "logs", id, "--limit", "2"], env)
      assert.strictEqual(logsText.stdout.trim(), "a\nb")
      assert.include(logsText.stderr, "next cursor: 2")
      // A target the registry does not declare is refused at submission, naming the targets there are.
      const unknown = yield* runCli(["machine", "submit", "ghost", "--", "true"], env)
      assert.strictEqual(unknown.exitCode, 1)
      assert.include(unknown.stderr, "ghost is not a target of the registry (targets: forge-1")
    })
  )

  it("two worker processes draining 1,000 jobs run each exactly once", async () => {
    const dataDir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-drain-")), "data")
    const ledger = path.join(dataDir, "..", "ran.txt")
    const env = { KEEL_DATA_DIR: dataDir, KEEL_REGISTRY: registryFile, KEEL_DEMO_DATA: "false" }
    // The data dir's database as the worker processes open it: its PostgreSQL schema under test:pg (pg-datadir.ts).
    const inProcess = ConfigProvider.fromMap(new Map(Object.entries(await onTestDatabase(env))))
    await Effect.runPromise(
      Effect.gen(function* () {
        const queue = yield* JobQueue
        for (let i = 0; i < 1_000; i++) {
          // Each job appends its own id (an O_APPEND write of one short line is atomic).
          yield* queue.submit({
            kind: "command",
            target: "forge-1",
            argv: ["sh", "-c", `echo job-${i} >> "$0"`, ledger]
          })
        }
      }).pipe(Effect.provide(ServicesLive), Effect.withConfigProvider(inProcess))
    )
    const worker = (name: string) =>
      new Promise<number | null>((resolve) => {
        const child = spawn(
          process.execPath,
          [
            path.join(root, "bin", "ctl.js"),
            "machine",
            "work",
            "--until-empty",
            "--concurrency",
            "4",
            "--worker",
            name
          ],
          { env: { ...process.env, ...env, KEEL_LOG_LEVEL: "warning" }, stdio: "ignore" }
        )
        child.on("exit", resolve)
      })
    const codes = await Promise.all([worker("alpha"), worker("beta")])
    assert.deepStrictEqual(codes, [0, 0])
    const lines = fs.readFileSync(ledger, "utf8").trim().split("\n")
    assert.strictEqual(lines.length, 1_000)
    assert.strictEqual(new Set(lines).size, 1_000)
    const stats = await Effect.runPromise(
      Effect.flatMap(JobQueue, (queue) => queue.stats).pipe(
        Effect.provide(ServicesLive),
        Effect.withConfigProvider(inProcess)
      )
    )
    assert.strictEqual(stats.counts.succeeded, 1_000)
  }, 180_000)
})
