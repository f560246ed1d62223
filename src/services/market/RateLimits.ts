import { Clock, Config, Duration, Effect, Option } from "effect"
import type { EndpointClass } from "../../contracts/market/Api.js"
import { clusterSettings } from "../platform/ClusterConfig.js"
import { redisSettings } from "../platform/RedisSettings.js"
import { type Allowed, type Exceeded, makeLocalCounters } from "./rate/LocalCounters.js"
import { makeRedisCounters } from "./rate/RedisCounters.js"

export type { Allowed, Exceeded } from "./rate/LocalCounters.js"

/** The shared counters could not be read and the class fails closed: nothing was counted; retry after this long. */
export interface Unavailable {
  readonly allowed: false
  readonly unavailable: true
  readonly retryAfterMillis: number
}

export type RateOutcome = Allowed | Exceeded | Unavailable

const CLASSES = ["public", "authenticated", "trading"] as const

/** docs/marketplace.md, "Rate limits": the shared counters' Redis, and what each class does while it fails. */
export const rateLimitSettings = Config.all({
  redis: redisSettings,
  /** Classes refused (503) while Redis fails; the others are counted by this process alone meanwhile. */
  failClosed: Config.string("KEEL_RATE_LIMIT_FAIL_CLOSED").pipe(
    Config.withDefault("trading"),
    Config.map((text) =>
      text.trim() === "none"
        ? []
        : text
            .split(",")
            .map((name) => name.trim())
            .filter((name) => name !== "")
    ),
    Config.validate({
      message: `must be \`none\` or a comma-separated list of ${CLASSES.join(", ")}`,
      validation: (names) => names.every((name) => (CLASSES as ReadonlyArray<string>).includes(name))
    })
  )
})

/** How long a fail-closed request is told to wait: about as long as the client takes to reconnect. */
const UNAVAILABLE_RETRY_MILLIS = 2_000

/**
 * The marketplace's request counters (docs/marketplace.md, "Rate limits"). Without `KEEL_REDIS_URL` they are this
 * process's own (`LocalCounters`): the whole truth for one process, up to one limit per process when several serve.
 * With it they are shared by every process through Redis, one atomic script a request; while Redis fails, each
 * endpoint class follows its policy (`KEEL_RATE_LIMIT_FAIL_CLOSED`): fail-closed classes are refused with a 503,
 * the others fall back to this process's counters. Each outage is logged once when it starts and once when it ends.
 */
export class RateLimits extends Effect.Service<RateLimits>()("market/RateLimits", {
  scoped: Effect.gen(function* () {
    const settings = yield* rateLimitSettings
    const local = makeLocalCounters()
    const localConsume = (key: string, limit: number, windowMillis: number) =>
      Effect.map(Clock.currentTimeMillis, (now) => ({
        now,
        outcome: local.consumeAt(key, limit, windowMillis, now) as RateOutcome
      }))
    const common = { consumeAt: local.consumeAt, size: local.size, sweeps: local.sweeps, shared: false }

    if (Option.isNone(settings.redis.url)) {
      const cluster = yield* clusterSettings
      if (cluster.mode === "runners")
        yield* Effect.logWarning(
          "rate limits are this runner's own (no KEEL_REDIS_URL): a limit of L per window allows up to L per runner"
        )
      return {
        ...common,
        /** Counts one request of class `cls` against `key`, now by the Effect clock (tests move it). */
        consume: (_cls: EndpointClass, key: string, limit: number, windowMillis: number) =>
          localConsume(key, limit, windowMillis)
      } as const
    }

    const redis = yield* makeRedisCounters({
      url: settings.redis.url.value,
      prefix: settings.redis.prefix,
      timeout: settings.redis.timeout,
      connectWait: Duration.seconds(2)
    })
    const closed = new Set<string>(settings.failClosed)
    const policy = CLASSES.map((cls) => `${cls} ${closed.has(cls) ? "refused" : "counted by this process"}`).join(", ")
    if (!redis.connectedAtStart) yield* Effect.logWarning(`rate limits: Redis not reachable at start; ${policy}`)
    let failing = !redis.connectedAtStart

    const consume = (cls: EndpointClass, key: string, limit: number, windowMillis: number) =>
      Effect.gen(function* () {
        const counted = yield* Effect.either(redis.consume(key, limit, windowMillis))
        const now = yield* Clock.currentTimeMillis
        if (counted._tag === "Right") {
          if (failing) {
            failing = false
            yield* Effect.logInfo("rate limits: Redis reachable again; counting shared")
          }
          return { now, outcome: counted.right as RateOutcome }
        }
        if (!failing) {
          failing = true
          yield* Effect.logWarning(`rate limits: Redis failing (${counted.left.reason}); ${policy}`)
        }
        if (closed.has(cls))
          return {
            now,
            outcome: { allowed: false, unavailable: true, retryAfterMillis: UNAVAILABLE_RETRY_MILLIS } as RateOutcome
          }
        return yield* localConsume(key, limit, windowMillis)
      })

    return { ...common, shared: true, consume } as const
  })
}) {}
