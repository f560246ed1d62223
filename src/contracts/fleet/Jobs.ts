import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

export class JobNotFound extends Schema.TaggedError<JobNotFound>()(
  "JobNotFound",
  { code: Schema.Literal("JOB_NOT_FOUND"), id: Schema.String, detail: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}

export const JobState = Schema.Literal("queued", "running", "succeeded", "failed", "cancelled")
export type JobState = typeof JobState.Type

/** A job as the jobs API answers it (docs/control-plane.md, "Jobs"): these fields of `jobView`, the others dropped. */
export const JobView = Schema.Struct({
  id: Schema.String,
  kind: Schema.String,
  target: Schema.String,
  argv: Schema.Array(Schema.String),
  state: JobState,
  attempt: Schema.Int,
  created_at: Schema.String,
  started_at: Schema.NullOr(Schema.String),
  finished_at: Schema.NullOr(Schema.String),
  exit_code: Schema.NullOr(Schema.Int),
  error: Schema.NullOr(Schema.String)
})

/** A page of a job's output after a cursor (a line number); `next` continues. */
export const JobOutputPage = Schema.Struct({
  lines: Schema.Array(
    Schema.Struct({ line_no: Schema.Int, stream: Schema.Literal("stdout", "stderr"), line: Schema.String })
  ),
  next: Schema.Int
})

/**
 * An idempotency key already names a job with another kind, target or command: nothing was queued. `job` names it
 * only to a caller that may know that job (JobQueue.submitAs: the grant covers its target).
 */
export class JobKeyReused extends Schema.TaggedError<JobKeyReused>()(
  "JobKeyReused",
  { code: Schema.Literal("JOB_KEY_REUSED"), job: Schema.optional(Schema.String), detail: Schema.String },
  HttpApiSchema.annotations({ status: 409 })
) {}
