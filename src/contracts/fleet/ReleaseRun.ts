import * as Workflow from "@effect/workflow/Workflow"
import { Schema } from "effect"

export const ReleaseRunResult = Schema.Struct({
  run_id: Schema.String,
  /** The run's terminal state (`published`, `failed`), or `missing` when no such run was ever recorded. */
  state: Schema.String
})

/**
 * `ReleaseRun` in the server (docs/releases.md, "The run in the server"): drives a submitted run from its record
 * to `published` or `failed` on the cluster's workflow engine, so a run no longer needs its submitter — a server
 * killed mid-run resumes it when it starts again. Each round is one activity (`advance` until the run is
 * terminal or the round's bound passes), then a durable sleep; `advance` is idempotent (every step decided from
 * the run record), so an activity re-run after a crash repeats nothing that was done (docs/durability.md).
 */
export const ReleaseRunWorkflow = Workflow.make({
  name: "ReleaseRun",
  payload: { run_id: Schema.String },
  success: ReleaseRunResult,
  idempotencyKey: ({ run_id }) => run_id
})
