import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { CancelledJobSchema, QueueDrainTimedOut, StorageUndeclared, TargetPauseSchema } from "../fleet/Handoff.js"
import { RequestStruct } from "../shared/RequestSchema.js"
import { FleetAuth, RequiredAction } from "./FleetAuth.js"

const QueueTarget = Schema.Struct({ target: Schema.String })

/**
 * A target's queue as its handoff worker reaches it (docs/control-plane.md, "Handoff queue"): the queue lives in
 * the control plane's database, the worker on the target. Registry action `storage-queue` for the target.
 */
export class HandoffQueueApi extends HttpApiGroup.make("handoffQueue")
  .add(
    HttpApiEndpoint.get("pause", "/fleet/queue/targets/:target/pause")
      .annotate(RequiredAction, "storage-queue")
      .setPath(QueueTarget)
      .addSuccess(Schema.Struct({ target: Schema.String, pause: TargetPauseSchema }))
      .annotate(OpenApi.Description, "The target's own queue pause (never set, false or true). Needs storage-queue.")
  )
  .add(
    HttpApiEndpoint.put("setPause", "/fleet/queue/targets/:target/pause")
      .annotate(RequiredAction, "storage-queue")
      .setPath(QueueTarget)
      .setPayload(TargetPauseSchema)
      .addSuccess(Schema.Struct({ target: Schema.String, pause: TargetPauseSchema }))
      .annotate(
        OpenApi.Description,
        "Sets the target's own pause to exactly this (restores a capture). Needs storage-queue."
      )
  )
  .add(
    HttpApiEndpoint.post("drain", "/fleet/queue/targets/:target/drain")
      .annotate(RequiredAction, "storage-queue")
      .setPath(QueueTarget)
      .setPayload(
        RequestStruct({
          transaction: Schema.String.pipe(Schema.minLength(1)),
          /** The caller's own bound, in seconds; the target's storage.drain_timeout_seconds caps it. */
          timeout_seconds: Schema.optional(Schema.Int.pipe(Schema.nonNegative()))
        })
      )
      .addSuccess(
        Schema.Struct({ target: Schema.String, transaction: Schema.String, cancelled: Schema.Array(Schema.String) })
      )
      .addError(QueueDrainTimedOut)
      .annotate(
        OpenApi.Description,
        "Pauses the target's queue, waits at most timeout_seconds (capped by its storage.drain_timeout_seconds) for its running jobs, then cancels its queued jobs (handoff_cancelled, the transaction). Needs storage-queue."
      )
  )
  .add(
    HttpApiEndpoint.get("cancelled", "/fleet/queue/targets/:target/cancelled")
      .annotate(RequiredAction, "storage-queue")
      .setPath(QueueTarget)
      .setUrlParams(RequestStruct({ transaction: Schema.String.pipe(Schema.minLength(1)) }))
      .addSuccess(
        Schema.Struct({
          target: Schema.String,
          transaction: Schema.String,
          jobs: Schema.Array(CancelledJobSchema)
        })
      )
      .annotate(
        OpenApi.Description,
        "The target's jobs the transaction's drain cancelled, as they are now. Needs storage-queue."
      )
  )
  .addError(StorageUndeclared)
  .middleware(FleetAuth)
  .annotate(OpenApi.Title, "Handoff queue") {}
