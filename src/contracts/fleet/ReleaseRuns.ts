import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

/** A release run id: 32 lowercase hexadecimal digits. It names objects (release-runs/<id>/): nothing else is one. */
export const RunId = Schema.String.pipe(Schema.pattern(/^[0-9a-f]{32}$/), Schema.brand("RunId"))
export type RunId = typeof RunId.Type

export class ReleaseRunNotFound extends Schema.TaggedError<ReleaseRunNotFound>()(
  "ReleaseRunNotFound",
  { code: Schema.Literal("RELEASE_RUN_NOT_FOUND"), run_id: Schema.String, detail: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}

export const ReleaseRunStarted = Schema.Struct({ execution_id: Schema.String, run_id: Schema.String })

export const ReleaseRunStatus = Schema.Struct({
  run_id: Schema.String,
  /** Whether the server's workflow drives the run: running, done, or not_started (never handed over). */
  workflow: Schema.Literal("running", "done", "not_started"),
  /** The run record (docs/releases.md, "The run record"). */
  record: Schema.Unknown
})
