import { Chunk, Effect, Fiber, Queue, Scope } from "effect"
import { Notifier, type Subscription } from "../platform/notify/Notifier.js"
import { SqlDirect } from "../platform/SqlDirect.js"

/**
 * The channel the key table's trigger publishes on, at the commit of every update or delete of a key, whoever writes
 * (PostgreSQL: migration market/0006).
 */
export const API_KEYS_CHANNEL = "market_api_keys"

/** The change counter triggers move on every update or delete of a key: the latest committed value. */
const changeCounter = (direct: SqlDirect) =>
  direct
    .readLatest(function* (db) {
      const rows = yield* db.all<{ n: bigint }>("SELECT n FROM market_api_key_changes WHERE id = 1")
      return rows[0]?.n ?? -1n
    })
    .pipe(Effect.orDie)

/**
 * What every authentication runs first: `forget` (the cached keys) when a key may have changed, in any process,
 * since the last look. Two ways to know (docs/marketplace.md, "API keys"):
 * - the change counter (`market_api_key_changes`), read from the latest commit (`readLatest`, whatever transaction
 *   another request holds open): on SQLite, where it is a read on the hot connection, and wherever notifications do
 *   not reach other processes;
 * - notifications (a Notifier that reaches the whole database: PostgreSQL), which cost no round trip: the trigger
 *   publishes at the change's commit, and anything that arrived since the last look forgets. The subscription is
 *   made at the first authentication, which waits for it. While it is not listening (its connection lost, from the
 *   moment that is noticed) the counter is read instead; back to notifications, the resync that comes with it
 *   forgets the cache once more (a change between the last counter read and the new LISTEN told nobody).
 */
export const keyChangeWatch = (forget: () => void) =>
  Effect.gen(function* () {
    const direct = yield* SqlDirect
    const notifier = yield* Notifier
    const scope = yield* Effect.scope
    let seenChanges: bigint | undefined
    const byCounter = Effect.map(changeCounter(direct), (changes) => {
      if (changes !== seenChanges) {
        forget()
        seenChanges = changes
      }
    })
    if (notifier.reach === "process") return byCounter

    let subscription: Subscription | undefined
    let subscribing: Fiber.Fiber<Subscription> | undefined
    /**
     * The subscription, made at the first authentication (a process that never authenticates, a `ctl` command,
     * opens no listener) in the service's scope, so a request interrupted meanwhile leaves it to the next.
     */
    const subscribed = Effect.suspend(() => {
      if (subscription !== undefined) return Effect.succeed(subscription)
      const fiber =
        subscribing === undefined
          ? notifier.subscribe(API_KEYS_CHANNEL).pipe(
              Effect.tap((made) => {
                subscription = made
              }),
              Scope.extend(scope),
              Effect.forkIn(scope),
              Effect.tap((forked) => {
                subscribing = forked
              })
            )
          : Effect.succeed(subscribing)
      // `Fiber.await`, not `Fiber.join`: joining also takes on the joined fiber's FiberRefs, its context among them,
      // and the subscribing fiber was forked from the first request's: every request that authenticated while the
      // subscription was being made went on with that request's HttpServerRequest and answered on its socket.
      return Effect.flatMap(fiber, (subscribing) => Effect.flatten(Fiber.await(subscribing)))
    })
    return Effect.gen(function* () {
      const changes = yield* subscribed
      if (!(yield* changes.listening)) return yield* byCounter
      // A message, or the resync queued when it listened again after a loss: forget.
      if (Chunk.isNonEmpty(yield* Queue.takeAll(changes.notifications))) forget()
    })
  })
