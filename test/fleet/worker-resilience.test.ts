import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Fiber, Layer } from "effect"
import { HostChannelLive, JobQueue, JobWorker, ServicesLive, ServicesTest } from "../support/keel.js"
import { cliOnPostgres } from "../support/pg-datadir.js"

const root = fileURLToPath(new URL("../..", import.meta.url))
const examples = path.join(root, "examples", "registry.yml")

/**
 * Another process writing the same SQLite file all the time: each write holds the lock ~20 ms, then the writer
 * lets go for ~10 ms (two thirds of the time the database is locked). It sleeps (Atomics.wait), not spins: a
 * spinning writer that never let go took a whole core of the 2-core CI machine for the minute the worker then
 * needed, as its busy waits lost every race for the lock until the writer stopped.
 */
const hammer = (databaseFile: string, seconds: number) =>
  spawn(
    process.execPath,
    [
      "-e",
      `const db = require("better-sqlite3")(${JSON.stringify(databaseFile)}, { timeout: 10000 })
       db.pragma("journal_mode = WAL")
       db.exec("CREATE TABLE IF NOT EXISTS hammer (x INTEGER)")
       const insert = db.prepare("INSERT INTO hammer (x) VALUES (?)")
       const end = Date.now() + ${seconds * 1000}
       const hold = new Int32Array(new SharedArrayBuffer(4))
       while (Date.now() < end) {
         db.exec("BEGIN IMMEDIATE")
         insert.run(Date.now())
         Atomics.wait(hold, 0, 0, 20)
         db.exec("COMMIT")
         Atomics.wait(hold, 0, 0, 10)
       }`
    ],
    { cwd: root, stdio: "ignore" }
  )

describe("the job worker under a busy database", () => {
  // SQLite only: the busy database is keel.db's one write lock held by another process two thirds of the time (what
  // BEGIN IMMEDIATE and the busy timeout are for). PostgreSQL has no database-wide write lock: writers lock rows.
  it.skipIf(cliOnPostgres)(
    "`ctl machine work` finishes every job while another process writes keel.db all the time (SQLite's write lock)",
    async () => {
      const dataDir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-busy-")), "data")
      const env = { KEEL_DATA_DIR: dataDir, KEEL_REGISTRY: examples, KEEL_DEMO_DATA: "false" }
      const JOBS = 30
      await Effect.runPromise(
        Effect.gen(function* () {
          const queue = yield* JobQueue
          for (let i = 0; i < JOBS; i++)
            yield* queue.submit({
              kind: "command",
              target: "forge-1",
              argv: ["sh", "-c", `for n in 1 2 3 4 5 6 7 8 9 10; do echo job-${i} line $n; sleep 0.01; done`]
            })
        }).pipe(
          Effect.provide(ServicesLive),
          Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))
        )
      )
      const writer = hammer(path.join(dataDir, "keel.db"), 60)
      try {
        const code = await new Promise<number | null>((resolve) => {
          const child = spawn(
            process.execPath,
            [path.join(root, "bin", "ctl.js"), "machine", "work", "--until-empty", "--concurrency", "4"],
            { env: { ...process.env, ...env, KEEL_LOG_LEVEL: "error" }, stdio: ["ignore", "ignore", "inherit"] }
          )
          child.on("exit", resolve)
        })
        assert.strictEqual(code, 0)
      } finally {
        writer.kill("SIGKILL")
      }
      const result = await Effect.runPromise(
        Effect.gen(function* () {
          const stats = yield* (yield* JobQueue).stats
          const sql = yield* SqlClient.SqlClient
          const lines = yield* sql<{ n: number }>`SELECT count(*) AS n FROM job_output`
          const hammered = yield* sql<{ n: number }>`SELECT count(*) AS n FROM hammer`
          return { stats, lines: Number(lines[0]?.n ?? 0), hammered: Number(hammered[0]?.n ?? 0) }
        }).pipe(
          Effect.provide(ServicesLive),
          Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))
        )
      )
      assert.strictEqual(result.stats.counts.succeeded, JOBS)
      assert.strictEqual(result.stats.counts.running, 0)
      assert.strictEqual(result.lines, JOBS * 10) // every line stored once
      // The other process did write all along (it started before the worker and was stopped after it).
      assert.isAtLeast(result.hammered, 10)
    },
    120_000
  )
})

describe("the job worker's lifetime", () => {
  const registryWith = (dir: string, names: ReadonlyArray<string>) => {
    const file = path.join(dir, "registry.yml")
    fs.writeFileSync(
      file,
      JSON.stringify({ version: 1, targets: names.map((name) => ({ name, os: "linux", channel: "local" })) })
    )
    return file
  }
  const layer = (registry: string) =>
    JobWorker.Default.pipe(
      Layer.provideMerge(HostChannelLive),
      Layer.provideMerge(ServicesTest({ dataDir: fs.mkdtempSync(path.join(os.tmpdir(), "keel-worker-")) })),
      Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["KEEL_REGISTRY", registry]]))))
    )

  it.live("a target added to the registry after the worker started is run, not failed for good", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-late-"))
    const registry = registryWith(dir, ["early"])
    return Effect.gen(function* () {
      const queue = yield* JobQueue
      const worker = yield* Effect.fork(
        (yield* JobWorker).work({ worker: "w", concurrency: 1, untilEmpty: false, pollMillis: 20 })
      )
      const first = yield* queue.submit({ kind: "command", target: "early", argv: ["true"] })
      for (let i = 0; i < 500 && (yield* queue.get(first.id)).state !== "succeeded"; i++) yield* Effect.sleep(10)
      registryWith(dir, ["early", "late"])
      const late = yield* queue.submit({ kind: "command", target: "late", argv: ["true"] })
      for (let i = 0; i < 500 && ["queued", "running"].includes((yield* queue.get(late.id)).state); i++)
        yield* Effect.sleep(10)
      yield* Fiber.interrupt(worker)
      assert.strictEqual((yield* queue.get(late.id)).state, "succeeded")
    }).pipe(Effect.provide(layer(registry)))
  })

  it.live("a worker that stops gives its running jobs back at once, instead of leaving them to their leases", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-release-"))
    const registry = registryWith(dir, ["here"])
    return Effect.gen(function* () {
      const queue = yield* JobQueue
      const job = yield* queue.submit({ kind: "command", target: "here", argv: ["sleep", "30"] })
      const worker = yield* Effect.fork((yield* JobWorker).work({ worker: "w", concurrency: 1, untilEmpty: true }))
      for (let i = 0; i < 500 && (yield* queue.get(job.id)).state !== "running"; i++) yield* Effect.sleep(10)
      assert.strictEqual((yield* queue.get(job.id)).state, "running")
      yield* Fiber.interrupt(worker)
      const after = yield* queue.get(job.id)
      assert.strictEqual(after.state, "queued")
    }).pipe(Effect.provide(layer(registry)))
  })
})
