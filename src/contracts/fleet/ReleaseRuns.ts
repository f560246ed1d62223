import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { describedBy } from "../controlplane/Answers.js"

/** A release run id: 32 lowercase hexadecimal digits. It names objects (release-runs/<id>/): nothing else is one. */
export const RunId = Schema.String.pipe(Schema.pattern(/^[0-9a-f]{32}$/), Schema.brand("RunId"))
export type RunId = typeof RunId.Type

export class ReleaseRunNotFound extends Schema.TaggedError<ReleaseRunNotFound>()(
  "ReleaseRunNotFound",
  { code: Schema.Literal("RELEASE_RUN_NOT_FOUND"), run_id: Schema.String, detail: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}

/** What identifies a run (seed 002, submission rule 2): the same inputs are the same run. */
export const RunInputs = Schema.Struct({
  product: Schema.String,
  version: Schema.String,
  channel: Schema.String,
  source: Schema.Struct({ revision: Schema.String, tree: Schema.String, sha256: Schema.String, size: Schema.Number }),
  /** Digest of the build recipe (the release manifest the source declares). */
  manifest_sha256: Schema.String
})
export type RunInputs = typeof RunInputs.Type

export const RunState = Schema.Literal("submitted", "building", "publishing", "published", "failed")
export type RunState = typeof RunState.Type

/** A release run's record (docs/releases.md, "The run record"): `release-runs/<id>/run.json`. */
export const RunRecord = Schema.Struct({
  schema: Schema.Literal("keel.release-run/v1"),
  run_id: Schema.String,
  /** Bumped by every update; updates are compare-and-set on the record's bytes. */
  generation: Schema.Number,
  state: RunState,
  inputs: RunInputs,
  /** Per step (`source_published`, `catalog_recorded`, `platform:<p>`, each publication file…): what it recorded. */
  steps: Schema.Record({ key: Schema.String, value: Schema.Record({ key: Schema.String, value: Schema.Unknown }) }),
  failure: Schema.NullOr(Schema.Struct({ step: Schema.String, detail: Schema.String })),
  created_at: Schema.String,
  updated_at: Schema.String
})
export type RunRecord = typeof RunRecord.Type

export const ReleaseRunStarted = Schema.Struct({ execution_id: Schema.String, run_id: Schema.String })

export const ReleaseRunStatus = Schema.Struct({
  run_id: Schema.String,
  /** Whether the server's workflow drives the run: running, done, or not_started (never handed over). */
  workflow: Schema.Literal("running", "done", "not_started"),
  /** The run record as stored, never re-encoded (docs/releases.md, "The run record"). */
  record: describedBy(RunRecord, "The run record (docs/releases.md)")
})
