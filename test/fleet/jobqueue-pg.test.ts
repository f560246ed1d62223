import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { AllMigrations, JobQueue, migrationsLayer, withDialect } from "../support/keel.js"
import { freshSchema, pgClientIn, postgresSkipReason } from "../support/pg-schema.js"

/**
 * The job queue with two processes' worth of connections on one PostgreSQL schema (docs/database.md,
 * "Concurrency on PostgreSQL"): two pools of 4, each with its own JobQueue, as two Keel processes would be.
 * Skipped only when there is no PostgreSQL (test/support/pg-schema.ts).
 */
const processIn = (schema: string, migrate: boolean) => {
  const client = withDialect(pgClientIn(schema, 4))
  const database = migrate ? migrationsLayer(AllMigrations).pipe(Layer.provideMerge(client)) : client
  return Layer.build(JobQueue.Default.pipe(Layer.provideMerge(database))).pipe(
    Effect.map((context) => ({ queue: Context.get(context, JobQueue), sql: Context.get(context, SqlClient.SqlClient) }))
  )
}

const twoProcesses = Effect.gen(function* () {
  const schema = yield* freshSchema
  const first = yield* processIn(schema, true)
  const second = yield* processIn(schema, false)
  return [first.queue, second.queue, first.sql] as const
})

const JOBS = 500
const WORKERS_PER_PROCESS = 4

describe.skipIf(postgresSkipReason !== undefined)("the job queue, two processes on one PostgreSQL", () => {
  it.scoped("500 concurrent submits get 500 distinct seq; two processes × 4 workers claim each job exactly once", () =>
    Effect.gen(function* () {
      const queues = yield* twoProcesses
      const workers = Array.from({ length: 2 * WORKERS_PER_PROCESS }, (_, w) => ({
        w,
        queue: queues[w % 2] as JobQueue
      }))
      const submitted = yield* Effect.all(
        Array.from({ length: JOBS }, (_, i) =>
          (queues[i % 2] as JobQueue).submit({ kind: "k", target: `t${i % 5}`, argv: [String(i)] })
        ),
        { concurrency: 2 * WORKERS_PER_PROCESS }
      )
      assert.strictEqual(new Set(submitted.map((job) => job.id)).size, JOBS)
      const [seqs] = yield* queues[2]<{ distinct: string; max: string }>`SELECT count(DISTINCT seq) AS distinct,
        max(seq) AS max FROM jobs`
      assert.deepStrictEqual([Number(seqs!.distinct), Number(seqs!.max)], [JOBS, JOBS])
      // Each worker claims until the queue answers none: at most JOBS + 1 claims each, so the loop is bounded.
      const claims = yield* Effect.all(
        workers.map(({ w, queue }) =>
          Effect.iterate(
            { mine: [] as Array<string>, done: false, tries: 0 },
            {
              while: (s) => !s.done && s.tries <= JOBS,
              body: (s) =>
                Effect.map(queue.claim(`w${w}`, 60_000), (job) =>
                  Option.isSome(job)
                    ? { mine: [...s.mine, job.value.id], done: false, tries: s.tries + 1 }
                    : { ...s, done: true }
                )
            }
          )
        ),
        { concurrency: "unbounded" }
      )
      const ids = claims.flatMap((s) => s.mine)
      assert.strictEqual(ids.length, JOBS)
      assert.strictEqual(new Set(ids).size, JOBS)
    })
  )

  it.scoped("concurrent appends to one job from both processes number its lines without a gap or a repeat", () =>
    Effect.gen(function* () {
      const queues = yield* twoProcesses
      const job = yield* queues[0].submit({ kind: "k", target: "t", argv: ["x"] })
      yield* Effect.all(
        Array.from({ length: 8 }, (_, a) =>
          (queues[a % 2] as JobQueue).appendOutput(
            job.id,
            Array.from({ length: 5 }, (_, l) => ({ stream: "stdout" as const, line: `${a}.${l}` }))
          )
        ),
        { concurrency: "unbounded" }
      )
      const page = yield* queues[1].output(job.id, 0, 100)
      assert.deepStrictEqual(
        page.lines.map((l) => l.lineNo),
        Array.from({ length: 40 }, (_, i) => i + 1)
      )
    })
  )
})
