import { Effect } from "effect"
import { StorageUndeclared } from "../../../../contracts/fleet/Handoff.js"
import { HandoffQueue, HandoffQueueUnavailable } from "../../shared/handoff/HandoffQueue.js"
import type { TargetPause } from "../../shared/jobs/JobQueue.js"
import { FleetRegistry } from "../../shared/registry/Registry.js"

/**
 * A target's queue as its storage handoff uses it (docs/control-plane.md, the queue endpoints): only for a target
 * that declares a storage, and a drain bounded by that storage's `drain_timeout_seconds` whatever the caller asks.
 * The control plane's handlers are thin over it.
 */
export class TargetQueue extends Effect.Service<TargetQueue>()("fleet/TargetQueue", {
  effect: Effect.gen(function* () {
    const registry = yield* FleetRegistry
    const queue = yield* HandoffQueue

    const storageOf = (target: string) =>
      Effect.gen(function* () {
        const snapshot = yield* registry
          .read({ allowCached: true })
          .pipe(Effect.mapError((error) => new HandoffQueueUnavailable({ detail: error.detail })))
        const storage = snapshot.registry.targets.find((t) => t.name === target)?.storage
        if (storage === undefined)
          return yield* new StorageUndeclared({
            code: "STORAGE_UNDECLARED",
            target,
            detail: `${target} is not a registry target with a declared storage`
          })
        return storage
      })

    const pause = (target: string) => Effect.zipRight(storageOf(target), queue.pause(target))

    const setPause = (target: string, value: TargetPause) =>
      Effect.gen(function* () {
        yield* storageOf(target)
        yield* queue.setPause(target, value)
        return yield* queue.pause(target)
      })

    /** Cancels the target's queued jobs and waits for its running ones, at most the storage's drain bound. */
    const drain = (target: string, transaction: string, timeoutSeconds: number | undefined) =>
      Effect.gen(function* () {
        const storage = yield* storageOf(target)
        const bound = Math.min(storage.drain_timeout_seconds, timeoutSeconds ?? storage.drain_timeout_seconds)
        return yield* queue.drain(target, transaction, bound * 1000)
      })

    const cancelledBy = (target: string, transaction: string) =>
      Effect.zipRight(storageOf(target), queue.cancelledBy(target, transaction))

    return { pause, setPause, drain, cancelledBy } as const
  })
}) {}
