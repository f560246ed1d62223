import { Effect, PubSub } from "effect"
import { checkChannel, message, NOTIFICATIONS_KEPT, type Notification, type NotifierShape } from "./Notifier.js"

/**
 * The in-process adapter: a sliding `PubSub` per channel. Only this process's subscribers hear a publish, and it never
 * loses anything to a connection, so a subscription is always listening and never resyncs. Keel's adapter on SQLite:
 * another process writing the same file is not heard here (docs/database.md).
 */
export const makeInProcessNotifier = Effect.sync((): NotifierShape => {
  const channels = new Map<string, PubSub.PubSub<Notification>>()
  const channelOf = (channel: string) =>
    Effect.gen(function* () {
      const known = channels.get(checkChannel(channel))
      if (known !== undefined) return known
      const made = yield* PubSub.sliding<Notification>(NOTIFICATIONS_KEPT)
      // Another fiber may have made it meanwhile: keep the first.
      const first = channels.get(channel) ?? made
      channels.set(channel, first)
      return first
    })
  return {
    reach: "process",
    publish: (channel, payload = "") =>
      Effect.suspend(() => {
        const pubsub = channels.get(channel)
        if (pubsub !== undefined) return Effect.asVoid(PubSub.publish(pubsub, message(payload)))
        // Nobody has ever subscribed: nobody to tell (the name is still checked).
        checkChannel(channel)
        return Effect.void
      }),
    subscribe: (channel) =>
      Effect.map(Effect.flatMap(channelOf(channel), PubSub.subscribe), (notifications) => ({
        notifications,
        listening: Effect.succeed(true)
      }))
  }
})
