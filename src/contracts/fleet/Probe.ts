import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

/** Why a probe ended without reaching its host (its answer says which step). */
export class ProbeFailed extends Schema.TaggedError<ProbeFailed>()("ProbeFailed", {
  code: Schema.Literal("PROBE_FAILED"),
  step: Schema.Literal("registry", "reach", "report"),
  detail: Schema.String
}) {}

/** What a FleetProbe run found: the host's registry declaration digest, its kernel, and where its report is. */
export const ProbeResult = Schema.Struct({
  host: Schema.String,
  registry_digest: Schema.String,
  kernel: Schema.String,
  report_key: Schema.String
})

export class WorkflowNotFound extends Schema.TaggedError<WorkflowNotFound>()(
  "WorkflowNotFound",
  { code: Schema.Literal("WORKFLOW_NOT_FOUND"), execution_id: Schema.String, detail: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}

export const ProbeStarted = Schema.Struct({ execution_id: Schema.String, host: Schema.String })

export const ProbeStatus = Schema.Struct({
  execution_id: Schema.String,
  state: Schema.Literal("running", "succeeded", "failed"),
  result: Schema.NullOr(ProbeResult),
  error: Schema.NullOr(Schema.Struct({ code: Schema.String, step: Schema.String, detail: Schema.String }))
})
