import { Deferred, Effect } from "effect"

/**
 * The moment the server starts shutting down. Long-lived responses (event streams) end on it, so
 * a graceful shutdown is not held open for its whole grace period by clients that never hang up.
 */
export class Shutdown extends Effect.Service<Shutdown>()("platform/Shutdown", {
  effect: Effect.gen(function* () {
    const started = yield* Deferred.make<void>()
    return {
      /** Completes when shutdown begins. */
      started: Deferred.await(started),
      begin: Deferred.succeed(started, undefined).pipe(Effect.asVoid)
    } as const
  })
}) {}
