import { randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Option } from "effect"
import { QueueDrainTimedOut } from "../../../../contracts/fleet/Handoff.js"
import { JobKeyReused, JobNotFound, type JobState } from "../../../../contracts/fleet/Jobs.js"
import { retryBusy, sqlDefect } from "../../../platform/Database.js"
import { SqlDirect } from "../../../platform/SqlDirect.js"
import { dialectOf } from "../../../platform/sql/SqlDialect.js"

export interface Job {
  readonly id: string
  readonly kind: string
  readonly target: string
  readonly argv: ReadonlyArray<string>
  readonly state: JobState
  readonly attempt: number
  readonly worker: string | null
  readonly leaseExpiresAt: number | null
  readonly createdAt: number
  readonly startedAt: number | null
  readonly finishedAt: number | null
  readonly exitCode: number | null
  readonly error: string | null
  /** Why a queued job was cancelled by the system (`handoff_cancelled`), and by what (the transaction id). */
  readonly cancelReason: string | null
  readonly cancelRef: string | null
  /** The submitter's key: a second submit with it answers this job instead of queueing another. */
  readonly idempotencyKey: string | null
}

interface JobRow {
  readonly id: string
  readonly kind: string
  readonly target: string
  readonly argv: string
  readonly state: JobState
  readonly attempt: number
  readonly worker: string | null
  readonly lease_expires_at: number | null
  readonly created_at: number
  readonly started_at: number | null
  readonly finished_at: number | null
  readonly exit_code: number | null
  readonly error: string | null
  readonly cancel_reason?: string | null
  readonly cancel_ref?: string | null
  readonly idempotency_key?: string | null
}

const orNull = (value: number | null) => (value === null ? null : Number(value))

const toJob = (row: JobRow): Job => ({
  id: row.id,
  kind: row.kind,
  target: row.target,
  argv: JSON.parse(row.argv),
  state: row.state,
  attempt: Number(row.attempt),
  worker: row.worker,
  leaseExpiresAt: orNull(row.lease_expires_at),
  createdAt: Number(row.created_at),
  startedAt: orNull(row.started_at),
  finishedAt: orNull(row.finished_at),
  exitCode: orNull(row.exit_code),
  error: row.error,
  cancelReason: row.cancel_reason ?? null,
  cancelRef: row.cancel_ref ?? null,
  idempotencyKey: row.idempotency_key ?? null
})

/** A target's own pause as it was: absent (never set), or set to a value — restored exactly. */
export type TargetPause = { readonly set: false } | { readonly set: true; readonly paused: boolean }

const targetPauseKey = (target: string) => `paused:${target}`

export interface OutputLine {
  readonly lineNo: number
  readonly stream: "stdout" | "stderr"
  readonly line: string
}

type Sql = SqlClient.SqlClient

/** A write: retried while another process holds the lock, then a defect that names SQLite's cause. */
const write = <A, E, R>(effect: Effect.Effect<A, E, R>) => sqlDefect(retryBusy(effect))

/** Whether the whole queue is paused (claims give out nothing). */
const pausedIn = (sql: Sql) =>
  sql<{ value: string }>`SELECT value FROM queue_control WHERE key = 'paused'`.pipe(
    Effect.map((rows) => rows[0]?.value === "true"),
    Effect.orDie
  )

/** A job's life as a worker and a submitter see it: queued, claimed, leased, written to, finished or cancelled. */
const jobLifecycle = (sql: Sql, direct: SqlDirect) => {
  // PostgreSQL: several workers claim at once, and each must skip the row another is claiming (without the lock,
  // READ COMMITTED hands one job to several). SQLite has one writer and no FOR UPDATE.
  const onPg = dialectOf(sql).name === "pg"
  const claimLock = sql.literal(onPg ? "FOR UPDATE SKIP LOCKED" : "")
  const rowLock = sql.literal(onPg ? "FOR UPDATE" : "")
  /**
   * `seq = max(seq) + 1` is only unique while one writer inserts at a time: SQLite's single writer gives that,
   * PostgreSQL does not (two READ COMMITTED inserts read the same max). There the insert takes a transaction-scoped
   * advisory lock first (the two-key "KEEL" form, per schema, as the migration lock: docs/database.md), so submits
   * number in commit order, densely, as on SQLite — no migration, and no sequence whose gaps and out-of-commit-order
   * values a reader of `seq` would have to know about.
   */
  const numbered = <A, E, R>(insert: Effect.Effect<A, E, R>) =>
    onPg
      ? sql`SELECT pg_advisory_xact_lock(1262830924, hashtext(current_schema() || '/jobs.seq'))`.pipe(
          Effect.zipRight(insert),
          sql.withTransaction
        )
      : insert
  const paused = pausedIn(sql)
  /**
   * Queues a job. With an idempotency key (e.g. a release run's id and platform) a second submit answers the job
   * the key already names — whatever its state — and queues nothing; the same key for another kind, target or
   * command is refused (JobKeyReused).
   */
  const submit = Effect.fn("JobQueue.submit")(function* (job: {
    readonly kind: string
    readonly target: string
    readonly argv: ReadonlyArray<string>
    readonly idempotencyKey?: string | undefined
  }) {
    const now = yield* Clock.currentTimeMillis
    const id = `job_${now.toString(36)}_${randomBytes(5).toString("hex")}`
    const key = job.idempotencyKey ?? null
    const argv = JSON.stringify(job.argv)
    const row = yield* write(
      numbered(
        Effect.gen(function* () {
          const rows =
            yield* sql<JobRow>`INSERT INTO jobs (id, seq, kind, target, argv, state, created_at, idempotency_key)
          VALUES (${id}, (SELECT COALESCE(max(seq), 0) + 1 FROM jobs), ${job.kind}, ${job.target}, ${argv},
            'queued', ${now}, ${key})
          ON CONFLICT DO NOTHING RETURNING *`
          return rows[0] ?? (yield* sql<JobRow>`SELECT * FROM jobs WHERE idempotency_key = ${key}`)[0]
        })
      )
    )
    if (row === undefined) return yield* Effect.dieMessage(`job ${id} was neither queued nor found`)
    if (row.id !== id && (row.kind !== job.kind || row.target !== job.target || row.argv !== argv))
      return yield* new JobKeyReused({
        code: "JOB_KEY_REUSED",
        job: row.id,
        detail: `idempotency key ${key} names job ${row.id} (${row.kind} on ${row.target}), not this one`
      })
    return toJob(row)
  })

  /** The oldest claimable job (queued, or running past its lease), now this worker's; none when paused. */
  const claim = Effect.fn("JobQueue.claim")(function* (worker: string, leaseMillis: number) {
    if (yield* paused) return Option.none<Job>()
    const now = yield* Clock.currentTimeMillis
    // A target whose own queue is paused (a storage handoff) gives out nothing; the others go on. The outer test
    // of the state repeats the inner one for PostgreSQL, where a row lock waited for re-checks only the outer WHERE.
    const rows = yield* sql<JobRow>`UPDATE jobs SET state = 'running', worker = ${worker}, attempt = attempt + 1,
        started_at = ${now}, lease_expires_at = ${now + leaseMillis}
      WHERE id = (SELECT id FROM jobs WHERE (state = 'queued' OR (state = 'running' AND lease_expires_at < ${now}))
        AND target NOT IN (SELECT substr(key, 8) FROM queue_control WHERE key LIKE 'paused:%' AND value = 'true')
        ORDER BY seq LIMIT 1 ${claimLock})
      AND (state = 'queued' OR (state = 'running' AND lease_expires_at < ${now}))
      RETURNING *`
    return Option.map(Option.fromNullable(rows[0]), toJob)
  }, write)

  /** Extends a running job's lease; false when the job is no longer this worker's. */
  const renew = (id: string, worker: string, leaseMillis: number) =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* sql`UPDATE jobs SET lease_expires_at = ${now + leaseMillis}
        WHERE id = ${id} AND worker = ${worker} AND state = 'running' RETURNING id`
      return rows.length > 0
    }).pipe(write)

  /** Gives a running job back to the queue (a worker shutting down): it is claimable again at once. */
  const release = (id: string, worker: string) =>
    sql`UPDATE jobs SET state = 'queued', worker = NULL, lease_expires_at = NULL
      WHERE id = ${id} AND worker = ${worker} AND state = 'running'`.pipe(Effect.asVoid, write)

  /**
   * Appends a job's output lines. With `worker`, only while the job is still that worker's running attempt: a
   * worker that lost its lease (paused past it, cut off) never writes into the attempt that took over.
   */
  const appendOutput = (
    id: string,
    lines: ReadonlyArray<{ stream: "stdout" | "stderr"; line: string }>,
    worker?: string
  ) =>
    Effect.gen(function* () {
      if (lines.length === 0) return
      // PostgreSQL: the job row's lock orders this append after a reclaim that is committing (whose worker the
      // re-read then sees) and after another append's max(line_no) + 1 (SQLite's BEGIN IMMEDIATE does both).
      const holds = yield* worker === undefined
        ? sql`SELECT 1 FROM jobs WHERE id = ${id} ${rowLock}`
        : sql`SELECT 1 FROM jobs WHERE id = ${id} AND worker = ${worker} AND state = 'running' ${rowLock}`
      if (worker !== undefined && holds.length === 0) return
      const last = yield* sql<{ n: number | null }>`SELECT max(line_no) AS n FROM job_output WHERE job_id = ${id}`
      const start = Number(last[0]?.n ?? 0)
      yield* sql`INSERT INTO job_output ${sql.insert(
        lines.map((l, i) => ({ job_id: id, line_no: start + i + 1, stream: l.stream, line: l.line }))
      )}`
      // BEGIN IMMEDIATE: a read-then-write transaction that only took a read lock would fail at once
      // (SQLITE_BUSY_SNAPSHOT, no busy wait) whenever another process wrote in between.
    }).pipe(direct.transaction, write)

  /** Records the outcome, only while the job is still this worker's attempt. */
  const complete = Effect.fn("JobQueue.complete")(function* (
    id: string,
    worker: string,
    outcome: { readonly exitCode: number | null; readonly error?: string | undefined }
  ) {
    const now = yield* Clock.currentTimeMillis
    const state: JobState = outcome.exitCode === 0 && outcome.error === undefined ? "succeeded" : "failed"
    const rows = yield* sql`UPDATE jobs SET state = ${state}, exit_code = ${outcome.exitCode},
        error = ${outcome.error ?? null}, finished_at = ${now}, lease_expires_at = NULL
      WHERE id = ${id} AND worker = ${worker} AND state = 'running' RETURNING id`
    return rows.length > 0
  }, write)

  const cancel = (id: string) =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* sql`UPDATE jobs SET state = 'cancelled', finished_at = ${now}
        WHERE id = ${id} AND state = 'queued' RETURNING id`
      return rows.length > 0
    }).pipe(Effect.orDie)

  /** Cancels every queued job of `target`, recording why (`reason`) and by what (`ref`); the ids cancelled. */
  const cancelQueuedOn = (target: string, reason: string, ref: string) =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* sql<{ id: string }>`UPDATE jobs SET state = 'cancelled', finished_at = ${now},
          cancel_reason = ${reason}, cancel_ref = ${ref}
        WHERE target = ${target} AND state = 'queued' RETURNING id`
      return rows.map((r) => r.id)
    }).pipe(write)

  return { submit, claim, renew, release, appendOutput, complete, cancel, cancelQueuedOn } as const
}

/** What the queue holds: jobs, their output, counts and usage per target. */
const jobReads = (sql: Sql) => {
  const paused = pausedIn(sql)
  const get = (id: string) =>
    sql<JobRow>`SELECT * FROM jobs WHERE id = ${id}`.pipe(
      Effect.orDie,
      Effect.flatMap((rows) =>
        rows[0] === undefined
          ? Effect.fail(new JobNotFound({ code: "JOB_NOT_FOUND", id, detail: `no job ${id}` }))
          : Effect.succeed(toJob(rows[0]))
      )
    )

  /** A page of output lines after `cursor` (a line number), and the cursor to continue from. */
  const output = (id: string, cursor: number, limit: number) =>
    sql<{ line_no: number; stream: "stdout" | "stderr"; line: string }>`SELECT line_no, stream, line FROM job_output
      WHERE job_id = ${id} AND line_no > ${cursor} ORDER BY line_no LIMIT ${limit}`.pipe(
      Effect.map((rows) => {
        const lines: Array<OutputLine> = rows.map((r) => ({
          lineNo: Number(r.line_no),
          stream: r.stream,
          line: r.line
        }))
        return { lines, next: lines.length === 0 ? cursor : lines[lines.length - 1]!.lineNo }
      }),
      Effect.orDie
    )

  const fullOutput = (id: string) =>
    sql<{ line: string }>`SELECT line FROM job_output WHERE job_id = ${id} ORDER BY line_no`.pipe(
      Effect.map((rows) => rows.map((r) => r.line).join("\n")),
      Effect.orDie
    )

  /** The job's last non-blank line on `stream` (a build job ends with its answer there), if any. */
  const lastLine = (id: string, stream: "stdout" | "stderr") =>
    sql<{ line: string }>`SELECT line FROM job_output WHERE job_id = ${id} AND stream = ${stream}
      AND trim(line) <> '' ORDER BY line_no DESC LIMIT 1`.pipe(
      Effect.map((rows) => Option.fromNullable(rows[0]?.line)),
      Effect.orDie
    )

  /** Counts by state and the age of the oldest queued job (for gates and the overview). */
  const stats = Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const rows = yield* sql<{ state: JobState; n: number }>`SELECT state, count(*) AS n FROM jobs GROUP BY state`
    const oldest = yield* sql<{ at: number | null }>`SELECT min(created_at) AS at FROM jobs WHERE state = 'queued'`
    const counts: Record<JobState, number> = { queued: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 }
    for (const row of rows) counts[row.state] = Number(row.n)
    const at = oldest[0]?.at
    return {
      counts,
      paused: yield* paused,
      oldestQueuedAgeMs: at === null || at === undefined ? null : now - Number(at)
    }
  }).pipe(Effect.orDie)

  /** The state of each known job among `ids` (unknown ids are absent from the map). */
  const statesOf = (ids: ReadonlyArray<string>) =>
    (ids.length === 0
      ? Effect.succeed([] as ReadonlyArray<{ id: string; state: JobState }>)
      : sql<{ id: string; state: JobState }>`SELECT id, state FROM jobs WHERE ${sql.in("id", ids)}`
    ).pipe(
      Effect.map((rows) => new Map(rows.map((r) => [r.id, r.state] as const))),
      Effect.orDie
    )

  const liveOn = (target: string, state: "queued" | "running") =>
    sql<JobRow>`SELECT * FROM jobs WHERE target = ${target} AND state = ${state} ORDER BY seq`.pipe(
      Effect.map((rows) => rows.map(toJob)),
      Effect.orDie
    )

  /** The jobs running on `target` now (their work trees must not be touched). */
  const runningOn = (target: string) =>
    sql<{ id: string }>`SELECT id FROM jobs WHERE state = 'running' AND target = ${target}`.pipe(Effect.orDie)

  /** Per target: jobs running now, and job-hours since `since` (running jobs count up to now). */
  const usage = (since: number) =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* sql<{ target: string; running: number; millis: number | null }>`
        SELECT target,
          sum(CASE WHEN state = 'running' THEN 1 ELSE 0 END) AS running,
          sum(CASE WHEN started_at IS NULL THEN 0
                   ELSE COALESCE(finished_at, ${now})
                     - CASE WHEN started_at > ${since} THEN started_at ELSE ${since} END END) AS millis
        FROM jobs WHERE started_at IS NOT NULL AND COALESCE(finished_at, ${now}) >= ${since}
        GROUP BY target`
      return new Map(
        rows.map(
          (r) => [r.target, { running: Number(r.running), jobHours: Number(r.millis ?? 0) / 3_600_000 }] as const
        )
      )
    }).pipe(Effect.orDie)

  /** The jobs a system cancellation recorded with `ref` (e.g. a handoff's transaction id). */
  const cancelledBy = (ref: string) =>
    sql<JobRow>`SELECT * FROM jobs WHERE cancel_ref = ${ref} ORDER BY seq`.pipe(
      Effect.map((rows) => rows.map(toJob)),
      Effect.orDie
    )

  return { get, output, fullOutput, lastLine, stats, statesOf, liveOn, runningOn, usage, cancelledBy } as const
}

/** Pausing the queue or one target's part of it, and draining either. */
const queueControl = (sql: Sql, reads: ReturnType<typeof jobReads>) => {
  const { runningOn, stats } = reads
  const setPaused = (value: boolean) =>
    sql`INSERT INTO queue_control (key, value) VALUES ('paused', ${String(value)})
      ON CONFLICT (key) DO UPDATE SET value = excluded.value`.pipe(Effect.asVoid, Effect.orDie)

  /** Pauses claims and waits until nothing runs. */
  const drain = (pollMillis = 200) =>
    Effect.gen(function* () {
      yield* setPaused(true)
      while ((yield* stats).counts.running > 0) yield* Effect.sleep(pollMillis)
    })

  /** `target`'s own pause as it is now (captured before a handoff pauses it, restored exactly after). */
  const targetPause = (target: string) =>
    sql<{ value: string }>`SELECT value FROM queue_control WHERE key = ${targetPauseKey(target)}`.pipe(
      Effect.map(
        (rows): TargetPause =>
          rows[0] === undefined ? { set: false } : { set: true, paused: rows[0].value === "true" }
      ),
      Effect.orDie
    )

  /** Sets `target`'s own pause to exactly `state` (absent: the key is removed). */
  const setTargetPause = (target: string, state: TargetPause) =>
    (state.set
      ? sql`INSERT INTO queue_control (key, value) VALUES (${targetPauseKey(target)}, ${String(state.paused)})
          ON CONFLICT (key) DO UPDATE SET value = excluded.value`
      : sql`DELETE FROM queue_control WHERE key = ${targetPauseKey(target)}`
    ).pipe(Effect.asVoid, write)

  /**
   * Pauses `target`'s queue and waits, at most `timeoutMillis`, until nothing runs there; otherwise
   * QueueDrainTimedOut (the pause stays: the caller restores what it captured). Other targets never pause.
   */
  const drainTarget = (target: string, timeoutMillis: number, pollMillis = 200) =>
    Effect.gen(function* () {
      yield* setTargetPause(target, { set: true, paused: true })
      const deadline = (yield* Clock.currentTimeMillis) + timeoutMillis
      for (;;) {
        const running = (yield* runningOn(target)).map((r) => r.id)
        if (running.length === 0) return
        if ((yield* Clock.currentTimeMillis) >= deadline)
          return yield* new QueueDrainTimedOut({
            code: "QUEUE_DRAIN_TIMED_OUT",
            target,
            running,
            detail: `${running.length} job(s) still running on ${target} after ${timeoutMillis} ms`
          })
        yield* Effect.sleep(pollMillis)
      }
    })

  return { pause: setPaused(true), resume: setPaused(false), drain, targetPause, setTargetPause, drainTarget } as const
}

type Submit = ReturnType<typeof jobLifecycle>["submit"]

/**
 * `submit` for a caller who may not know every job (the jobs API): a key that names another job names it (`job`)
 * only when `mayKnow` holds for that job's target; otherwise the refusal says only that the key names another job,
 * never its id, target or command.
 */
const submitAs =
  (submit: Submit, get: ReturnType<typeof jobReads>["get"]) =>
  <R>(job: Parameters<Submit>[0], mayKnow: (target: string) => Effect.Effect<boolean, never, R>) =>
    submit(job).pipe(
      Effect.catchTag("JobKeyReused", (reused) =>
        Effect.gen(function* () {
          const other = reused.job === undefined ? Option.none() : yield* get(reused.job).pipe(Effect.option)
          if (Option.isSome(other) && (yield* mayKnow(other.value.target))) return yield* reused
          return yield* new JobKeyReused({
            code: "JOB_KEY_REUSED",
            detail: `idempotency key ${job.idempotencyKey ?? ""} names another job`
          })
        })
      )
    )

/**
 * The durable job queue on the application database. A claim is one UPDATE … RETURNING, so two
 * workers (threads or processes) never take the same job; a running job is leased, and a worker
 * that dies loses its jobs to whoever claims after the lease expires. Completion is fenced by the
 * worker name: a worker whose lease was taken over cannot overwrite the new attempt.
 */
export class JobQueue extends Effect.Service<JobQueue>()("fleet/JobQueue", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const direct = yield* SqlDirect
    const reads = jobReads(sql)
    const lifecycle = jobLifecycle(sql, direct)
    return {
      ...lifecycle,
      ...reads,
      ...queueControl(sql, reads),
      submitAs: submitAs(lifecycle.submit, reads.get)
    } as const
  }),
  dependencies: [SqlDirect.Default]
}) {}
