import { Context, type Effect, type Queue, type Scope } from "effect"

/**
 * What a subscriber is told. A notification says "look again": the data is in the database, and a subscriber re-reads
 * it rather than trusting what it was told.
 * - `Message`: something was published on the channel (`payload`, "" when none).
 * - `Resync`: the subscription is listening again after losing its connection; whatever was published meanwhile may
 *   never arrive, so read again as if told.
 */
export type Notification = { readonly _tag: "Message"; readonly payload: string } | { readonly _tag: "Resync" }

export const message = (payload: string): Notification => ({ _tag: "Message", payload })
export const resync: Notification = { _tag: "Resync" }

/** One subscriber's view of a channel, for as long as the scope it was made in. */
export interface Subscription {
  /**
   * What arrives on the channel, oldest first. At most `NOTIFICATIONS_KEPT` wait per channel; past that the oldest
   * are dropped (a subscriber that falls behind still has the newest, so it still reads again).
   */
  readonly notifications: Queue.Dequeue<Notification>
  /**
   * Whether every publish on the channel reaches this subscription now. False while the adapter has lost its
   * connection (from the moment it notices) until it listens again, when a `Resync` is queued at the same instant.
   */
  readonly listening: Effect.Effect<boolean>
}

/**
 * Wake-ups across processes: a publisher says "something changed on `channel`", every subscriber of that channel is
 * told. Adapters (chosen by the SqlClient's engine, provided beside it: `notifierFromClient`):
 * - in-process (`reach: "process"`): subscribers of this process only (SQLite, tests, embedding); a writer publishes
 *   after its commit;
 * - PostgreSQL (`reach: "database"`): `LISTEN`/`NOTIFY`, every process on the same database and schema; a writer's
 *   transaction publishes itself (`pg_notify` in it, or a trigger), delivered when, and only if, it commits.
 * docs/database.md, "Notifications between processes".
 */
export interface NotifierShape {
  readonly reach: "process" | "database"
  /**
   * Publishes on `channel` (a name of `[a-z0-9_]`, at most 30 characters). On PostgreSQL it is a `pg_notify` sent
   * on the fiber's connection: inside a transaction it is delivered when the transaction commits.
   */
  readonly publish: (channel: string, payload?: string) => Effect.Effect<void>
  /**
   * Subscribes to `channel` for the scope. Returns once the channel is listened to (or once the adapter has failed to
   * connect: then `listening` is false until a `Resync`), so a subscriber that reads after it misses nothing.
   */
  readonly subscribe: (channel: string) => Effect.Effect<Subscription, never, Scope.Scope>
}

export class Notifier extends Context.Tag("platform/Notifier")<Notifier, NotifierShape>() {}

/** Notifications kept per channel for a subscriber that has not taken them (the oldest go first). */
export const NOTIFICATIONS_KEPT = 64

const CHANNEL = /^[a-z][a-z0-9_]{0,29}$/

/**
 * A channel name both adapters accept. A bad one is a programming error (channels are constants in the code), so a
 * defect: on PostgreSQL the name, its schema and a separator must fit 63 bytes (md5 of a long schema: 32).
 */
export const checkChannel = (channel: string) => {
  if (!CHANNEL.test(channel)) throw new Error(`not a notification channel name: ${JSON.stringify(channel)}`)
  return channel
}
