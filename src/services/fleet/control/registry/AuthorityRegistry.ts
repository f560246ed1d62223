import * as fs from "node:fs/promises"
import { Config, Duration, Effect, Either, Option, Ref, Schedule } from "effect"
import { durationSetting } from "../../../platform/DurationSetting.js"
import { stripCredentials } from "../../../platform/GitMirror.js"
import {
  FleetRegistry,
  type FleetRegistryInvalid,
  type FleetRegistrySnapshot,
  FleetRegistryUnavailable
} from "../../shared/registry/Registry.js"

/** What the last read answered, and the file's stamp (inode, size, mtime) it was read at, for a file source. */
interface Held {
  readonly result: Either.Either<FleetRegistrySnapshot, FleetRegistryUnavailable | FleetRegistryInvalid>
  readonly stamp: string | undefined
}

/**
 * The registry as authorization reads it: a snapshot in memory, never a read on the request's path that could
 * wait on git (issue 42: with the git server hanging, every control-plane request took KEEL_GIT_TIMEOUT).
 *
 * - A **git** source is read in the background every `KEEL_REGISTRY_REFRESH` (default 30 s), from the first time
 *   authorization needs it; a request answers the latest read. A change pushed to the repository is in force
 *   within that interval plus the fetch's own time. While the repository cannot be read, the read answers the
 *   last valid snapshot as every history reader does; before the first read completes, the last valid snapshot
 *   of the configured source (kept in the object store: no git), and with none, `REGISTRY_UNAVAILABLE`.
 * - A **file** source is local: each request compares the file's inode, size and modification time with those it
 *   was read at (one `stat`) and reads it again at once when they differ, so an edit is in force on the next
 *   request, as before.
 *
 * A read that fails (unreadable with no snapshot, or invalid) is held as that failure: nobody is authorized until
 * a read succeeds again (fail closed).
 */
export class AuthorityRegistry extends Effect.Service<AuthorityRegistry>()("fleet/AuthorityRegistry", {
  scoped: Effect.gen(function* () {
    const registry = yield* FleetRegistry
    const every = yield* durationSetting("KEEL_REGISTRY_REFRESH").pipe(
      Config.validate({ message: "must be more than 0", validation: (d) => Duration.toMillis(d) > 0 }),
      Config.withDefault(Duration.seconds(30))
    )
    const scope = yield* Effect.scope
    const held = yield* Ref.make(Option.none<Held>())
    const reading = yield* Effect.makeSemaphore(1)
    const file = registry.origin.isGit ? undefined : registry.origin.location

    const stampOf = (path: string) =>
      Effect.promise(() =>
        fs.stat(path).then(
          (s) => `${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}`,
          () => "absent"
        )
      )

    /** One read of the source (one at a time); what it answered replaces what was held. */
    const refresh = reading.withPermits(1)(
      Effect.gen(function* () {
        // The stamp before the read: a change made during it is seen by the next comparison.
        const stamp = file === undefined ? undefined : yield* stampOf(file)
        const result = yield* registry.readSourceNow({ allowCached: true }).pipe(Effect.either)
        if (Either.isLeft(result))
          yield* Effect.logWarning("the registry could not be read for authorization").pipe(
            Effect.annotateLogs("detail", result.left.detail)
          )
        yield* Ref.set(held, Option.some({ result, stamp }))
      })
    )

    /** The background reads: started once, by the first request that needs the registry; they end with the layer. */
    const started = yield* Effect.cached(
      Effect.asVoid(
        Effect.forkIn(
          Effect.repeat(
            refresh.pipe(Effect.catchAllCause((cause) => Effect.logWarning("registry refresh failed", cause))),
            Schedule.spaced(every)
          ),
          scope
        )
      )
    )

    const fromHeld = (h: Held) =>
      Either.isRight(h.result) ? Effect.succeed(h.result.right) : Effect.fail(h.result.left)

    /** The snapshot authorization uses now; never waits on git. */
    const current = Effect.gen(function* () {
      if (file !== undefined) {
        const stamp = yield* stampOf(file)
        const now = yield* Ref.get(held)
        if (Option.isNone(now) || now.value.stamp !== stamp) {
          // Another request may be reading it already: once it is done, read again only if still behind.
          yield* reading.withPermits(1)(Effect.void)
          const after = yield* Ref.get(held)
          if (Option.isNone(after) || after.value.stamp !== stamp) yield* refresh
        }
        const read = yield* Ref.get(held)
        if (Option.isSome(read)) return yield* fromHeld(read.value)
      }
      yield* started
      const now = yield* Ref.get(held)
      if (Option.isSome(now)) return yield* fromHeld(now.value)
      const cached = yield* registry.cachedOnly("the registry's source is being read; this is its last valid snapshot")
      if (Option.isSome(cached)) return cached.value
      return yield* new FleetRegistryUnavailable({
        code: "REGISTRY_UNAVAILABLE",
        source: stripCredentials(registry.origin.location ?? "(none)"),
        detail: "the registry has not been read yet and there is no snapshot of it; retry shortly"
      })
    })

    return { current, refresh } as const
  })
}) {}
