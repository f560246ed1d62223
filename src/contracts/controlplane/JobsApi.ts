import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { JobKeyReused, JobNotFound, JobOutputPage, JobView } from "../fleet/Jobs.js"
import { IntegerFromString, RequestStruct } from "../shared/RequestSchema.js"
import { FleetAuth, RequiredAction } from "./FleetAuth.js"

/**
 * Fleet jobs over HTTP, for clients off the control plane (a pre-check runner's gateway): submit a command to a
 * target's queue and read the job and its output (registry action `job-submit`, for the job's target); list a
 * target's queued or running jobs (`job-read` for the target: a host's janitor asks which run on it).
 */
export class JobsApi extends HttpApiGroup.make("jobs")
  .add(
    HttpApiEndpoint.post("submit", "/fleet/jobs")
      .annotate(RequiredAction, "job-submit")
      .setPayload(
        RequestStruct({
          kind: Schema.String.pipe(Schema.pattern(/^[a-z][a-z0-9-]{0,31}$/)),
          target: Schema.String.pipe(Schema.minLength(1)),
          argv: Schema.Array(Schema.String.pipe(Schema.maxLength(4096))).pipe(Schema.minItems(1), Schema.maxItems(64)),
          idempotency_key: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)))
        })
      )
      .addSuccess(JobView, { status: 202 })
      .addError(JobKeyReused)
      .annotate(
        OpenApi.Description,
        "Queues argv on the target (a repeat with the same idempotency_key answers the same job). Needs job-submit for the target."
      )
  )
  .add(
    HttpApiEndpoint.get("live", "/fleet/jobs")
      .annotate(RequiredAction, "job-read")
      .setUrlParams(
        RequestStruct({
          target: Schema.String.pipe(Schema.minLength(1)),
          state: Schema.Literal("queued", "running")
        })
      )
      .addSuccess(
        Schema.Struct({
          target: Schema.String,
          state: Schema.Literal("queued", "running"),
          jobs: Schema.Array(JobView)
        })
      )
      .annotate(
        OpenApi.Description,
        "The target's jobs in that state, oldest first (a host's janitor asks which run on it). Needs job-read for the target."
      )
  )
  .add(
    HttpApiEndpoint.get("job", "/fleet/jobs/:id")
      .annotate(RequiredAction, "job-submit")
      .setPath(Schema.Struct({ id: Schema.String }))
      .setUrlParams(
        RequestStruct({
          cursor: Schema.optional(IntegerFromString.pipe(Schema.int(), Schema.nonNegative())),
          limit: Schema.optional(IntegerFromString.pipe(Schema.int(), Schema.between(1, 1000)))
        })
      )
      .addSuccess(
        Schema.Struct({
          job: JobView,
          output: JobOutputPage
        })
      )
      .addError(JobNotFound)
      .annotate(
        OpenApi.Description,
        "The job and a page of its output after `cursor` (a line number; `next` continues). Needs job-submit for the job's target."
      )
  )
  .middleware(FleetAuth)
  .annotate(OpenApi.Title, "Jobs") {}
