import { Context, Effect, Layer, Schema } from "effect"
import type { QueueDrainTimedOut } from "../../../../contracts/fleet/Handoff.js"
import type { CancelledJob } from "../../../../contracts/fleet/HandoffReport.js"
import { JobQueue, type TargetPause } from "../jobs/JobQueue.js"

/** The queue could not be asked (the control plane did not answer, or refused): nothing changed there. */
export class HandoffQueueUnavailable extends Schema.TaggedError<HandoffQueueUnavailable>()("HandoffQueueUnavailable", {
  detail: Schema.String
}) {}

/**
 * The job queue as a handoff sees it: one target's own pause (captured, then restored exactly), a drain with a
 * bounded wait that cancels what is still queued (`handoff_cancelled`, the transaction id), and the jobs a
 * transaction cancelled. The queue lives in the control plane's database: the control plane reaches it directly,
 * a target-resident worker through the control plane's queue endpoints.
 */
export class HandoffQueue extends Context.Tag("fleet/HandoffQueue")<
  HandoffQueue,
  {
    readonly pause: (target: string) => Effect.Effect<TargetPause, HandoffQueueUnavailable>
    readonly setPause: (target: string, pause: TargetPause) => Effect.Effect<void, HandoffQueueUnavailable>
    /** Pauses the target, waits at most `timeoutMillis` for its running jobs, cancels its queued ones: their ids. */
    readonly drain: (
      target: string,
      transaction: string,
      timeoutMillis: number
    ) => Effect.Effect<ReadonlyArray<string>, QueueDrainTimedOut | HandoffQueueUnavailable>
    readonly cancelledBy: (
      target: string,
      transaction: string
    ) => Effect.Effect<ReadonlyArray<CancelledJob>, HandoffQueueUnavailable>
  }
>() {}

export const HANDOFF_CANCELLED = "handoff_cancelled"

/** The queue in this process's own database: the control plane's (and a target that is the control plane's host). */
export const HandoffQueueLocal = Layer.effect(
  HandoffQueue,
  Effect.gen(function* () {
    const queue = yield* JobQueue
    const cancelledBy = (target: string, transaction: string) =>
      Effect.map(queue.cancelledBy(transaction), (jobs) =>
        jobs
          .filter((job) => job.target === target)
          .map((job) => ({ id: job.id, state: job.state, cancel_reason: job.cancelReason, transaction: job.cancelRef }))
      )
    return {
      pause: queue.targetPause,
      setPause: queue.setTargetPause,
      drain: (target, transaction, timeoutMillis) =>
        Effect.gen(function* () {
          yield* queue.drainTarget(target, timeoutMillis)
          yield* queue.cancelQueuedOn(target, HANDOFF_CANCELLED, transaction)
          // Every job this transaction cancelled, also by an attempt that died before it was recorded.
          return (yield* cancelledBy(target, transaction)).map((job) => job.id)
        }),
      cancelledBy
    }
  })
)
