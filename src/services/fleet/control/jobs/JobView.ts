import type { Job } from "../../shared/jobs/JobQueue.js"

const iso = (millis: number) => new Date(millis).toISOString()

/** A job as Keel shows it, to `ctl machine … --json` and the jobs API alike (times ISO 8601, snake_case). */
export const jobView = (job: Job) => ({
  id: job.id,
  kind: job.kind,
  target: job.target,
  argv: job.argv,
  state: job.state,
  attempt: job.attempt,
  worker: job.worker,
  created_at: iso(job.createdAt),
  started_at: job.startedAt === null ? null : iso(job.startedAt),
  finished_at: job.finishedAt === null ? null : iso(job.finishedAt),
  duration_ms: job.startedAt === null || job.finishedAt === null ? null : job.finishedAt - job.startedAt,
  exit_code: job.exitCode,
  error: job.error,
  cancel_reason: job.cancelReason,
  cancel_ref: job.cancelRef,
  idempotency_key: job.idempotencyKey
})
