import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { ControlPlaneApi } from "../../contracts/controlplane/Api.js"
import { AuthorityUnavailable } from "../../contracts/fleet/Authority.js"
import { TargetQueue } from "../../services/fleet/control/handoff/TargetQueue.js"
import { grantForHost } from "./FleetAuth.js"

/** A target's queue for its handoff worker: `storage-queue` for the target, and the target must declare storage. */
export const HandoffQueueLive = HttpApiBuilder.group(ControlPlaneApi, "handoffQueue", (handlers) =>
  Effect.gen(function* () {
    const queue = yield* TargetQueue
    // A registry the queue could not read answers as every unreadable registry does (503).
    const problems = {
      HandoffQueueUnavailable: (e: { readonly detail: string }) =>
        Effect.fail(new AuthorityUnavailable({ code: "REGISTRY_UNAVAILABLE", detail: e.detail }))
    }
    return handlers
      .handle("pause", ({ path }) =>
        Effect.gen(function* () {
          yield* grantForHost(path.target)
          return { target: path.target, pause: yield* queue.pause(path.target).pipe(Effect.catchTags(problems)) }
        })
      )
      .handle("setPause", ({ path, payload }) =>
        Effect.gen(function* () {
          yield* grantForHost(path.target)
          const pause = yield* queue.setPause(path.target, payload).pipe(Effect.catchTags(problems))
          return { target: path.target, pause }
        })
      )
      .handle("drain", ({ path, payload }) =>
        Effect.gen(function* () {
          yield* grantForHost(path.target)
          const cancelled = yield* queue
            .drain(path.target, payload.transaction, payload.timeout_seconds)
            .pipe(Effect.catchTags(problems))
          return { target: path.target, transaction: payload.transaction, cancelled }
        })
      )
      .handle("cancelled", ({ path, urlParams }) =>
        Effect.gen(function* () {
          yield* grantForHost(path.target)
          const jobs = yield* queue.cancelledBy(path.target, urlParams.transaction).pipe(Effect.catchTags(problems))
          return { target: path.target, transaction: urlParams.transaction, jobs }
        })
      )
  })
)
