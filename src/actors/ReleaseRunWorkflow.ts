import { Activity, DurableClock } from "@effect/workflow"
import { Clock, Effect, Schema } from "effect"
import { ReleaseRunWorkflow } from "../contracts/fleet/ReleaseRun.js"
import { ReleaseRun } from "../services/fleet/control/releases/ReleaseRun.js"

/** How long one `advance` activity waits on a build before the workflow records a round and sleeps. */
const ROUND_MILLIS = 5 * 60_000

/** The run driven from its record: one `advance-N` activity per round, then a durable sleep (contract: `ReleaseRunWorkflow`). */
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
