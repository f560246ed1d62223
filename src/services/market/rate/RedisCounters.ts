import { Data, Duration, Effect, Redacted } from "effect"
import { Redis } from "ioredis"
import type { Allowed, Exceeded } from "./LocalCounters.js"

/** Redis did not answer a count (down, unreachable, too slow): the caller's failure policy decides. */
export class RedisUnreachable extends Data.TaggedError("RedisUnreachable")<{ readonly reason: string }> {}

/**
 * The fixed window of LocalCounters, counted in Redis in one script (atomic: two runners counting the same key see
 * each other's requests): a missing counter opens with one request and a life of one step (window / limit); each
 * request under the limit adds a step to its life; one over the limit changes nothing. Returns
 * `{ allowed (0|1), count, milliseconds the counter has left }`.
 */
const FIXED_WINDOW = `
local step = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local count = tonumber(redis.call("GET", KEYS[1]))
local ttl = tonumber(redis.call("PTTL", KEYS[1]))
if not count or ttl < 0 then
  redis.call("SET", KEYS[1], 1, "PX", step)
  return { 1, 1, step }
end
if count + 1 > limit then
  return { 0, count, ttl }
end
redis.call("SET", KEYS[1], count + 1, "PX", ttl + step)
return { 1, count + 1, ttl + step }
`

type FixedWindow = (key: string, step: number, limit: number) => Promise<[number, number, number]>

export interface RedisCountersOptions {
  readonly url: Redacted.Redacted<string>
  /** Prepended to every key: several Keels (or tests) may share one Redis. */
  readonly prefix: string
  /** How long a count may take before it counts as Redis failing. */
  readonly timeout: Duration.Duration
  /** How long the start waits for the first connection (it goes on without one: the failure policy applies). */
  readonly connectWait: Duration.Duration
}

/**
 * Counters shared through Redis (`KEEL_REDIS_URL`), for the scope. Not `@effect/experimental`'s Redis store, whose
 * client is hidden: its connection errors would go unheard (ioredis prints an unhandled `error` event's stack to
 * stderr) and a command sent while disconnected would wait in ioredis's offline queue. Here a count fails at once
 * while Redis is away (no offline queue, no per-command retries) and within `timeout` when it is slow; the client
 * reconnects on its own, 200 ms to 2 s apart.
 */
export const makeRedisCounters = (options: RedisCountersOptions) =>
  Effect.gen(function* () {
    const redis = yield* Effect.acquireRelease(
      Effect.sync(
        () =>
          new Redis(Redacted.value(options.url), {
            keyPrefix: options.prefix,
            enableOfflineQueue: false,
            maxRetriesPerRequest: 0,
            commandTimeout: Duration.toMillis(options.timeout),
            connectTimeout: 2_000,
            retryStrategy: (times) => Math.min(times * 200, 2_000)
          })
      ),
      (redis) => Effect.sync(() => redis.disconnect())
    )
    let lastError = "not connected yet"
    // Heard, so ioredis does not print it; the last one is the reason a count gives.
    redis.on("error", (error: Error) => {
      lastError = error.message
    })
    redis.defineCommand("keelFixedWindow", { lua: FIXED_WINDOW, numberOfKeys: 1 })
    const fixedWindow = (redis as unknown as { keelFixedWindow: FixedWindow }).keelFixedWindow.bind(redis)

    const ready = yield* Effect.async<boolean>((resume) => {
      if (redis.status === "ready") return resume(Effect.succeed(true))
      const onReady = () => resume(Effect.succeed(true))
      redis.once("ready", onReady)
      return Effect.sync(() => redis.off("ready", onReady))
    }).pipe(Effect.timeoutTo({ duration: options.connectWait, onTimeout: () => false, onSuccess: (ready) => ready }))

    const consume = (key: string, limit: number, windowMillis: number) =>
      Effect.tryPromise({
        // Whole milliseconds: Redis keeps a counter's life in them (LocalCounters keeps fractions).
        try: () => fixedWindow(key, Math.max(1, Math.ceil(windowMillis / limit)), limit),
        catch: (error) =>
          new RedisUnreachable({
            reason: redis.status === "ready" ? (error as Error).message : `${redis.status}: ${lastError}`
          })
      }).pipe(
        Effect.map(([allowed, count, ttl]): Allowed | Exceeded =>
          allowed === 1
            ? { allowed: true, remaining: limit - count, resetAfterMillis: ttl }
            : { allowed: false, retryAfterMillis: ttl }
        )
      )

    return { consume, connectedAtStart: ready } as const
  })
