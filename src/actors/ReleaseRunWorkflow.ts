import { Activity, DurableClock, Workflow } from "@effect/workflow"
import { Clock, Effect, Schema } from "effect"
import { ReleaseRun } from "../services/fleet/releases/ReleaseRun.js"

/** How long one `advance` activity waits on a build before the workflow records a round and sleeps. */
const ROUND_MILLIS = 5 * 60_000

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
 * the run record), so an activity re-run after a crash repeats nothing that was done.
 */
export const ReleaseRunWorkflow = Workflow.make({
  name: "ReleaseRun",
  payload: { run_id: Schema.String },
  success: ReleaseRunResult,
  idempotencyKey: ({ run_id }) => run_id
})

export const ReleaseRunWorkflowLive = ReleaseRunWorkflow.toLayer(
  Effect.fn(function* (payload) {
    const runs = yield* ReleaseRun
    for (let round = 0; ; round++) {
      const state = yield* Activity.make({
        name: `advance-${round}`,
        success: Schema.String,
        execute: Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          return yield* runs.advance(payload.run_id, { deadline: now + ROUND_MILLIS, stepPauseMillis: 0 }).pipe(
            Effect.map((record) => record.state as string),
            Effect.catchTag("SubmitRefused", () => Effect.succeed("missing")),
            // A store or database hiccup: the next round tries again.
            Effect.catchAll((error) =>
              Effect.as(Effect.logWarning(`release run ${payload.run_id}: ${String(error)}`), "retry")
            )
          )
        })
      })
      if (state === "published" || state === "failed" || state === "missing") return { run_id: payload.run_id, state }
      yield* DurableClock.sleep({ name: `wait-${round}`, duration: "5 seconds" })
    }
  })
)
