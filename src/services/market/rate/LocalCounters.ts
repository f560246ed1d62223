/** A request the limit let through: how many are left and when the counter is back to the full limit. */
export interface Allowed {
  readonly allowed: true
  readonly remaining: number
  readonly resetAfterMillis: number
}

/** A request over the limit: nothing was counted; the caller may retry after this long. */
export interface Exceeded {
  readonly allowed: false
  readonly retryAfterMillis: number
}

interface Counter {
  count: number
  expiresAt: number
}

/** Counters kept before expired ones are swept: a bound on memory, however many clients come and go. */
const SWEEP_AT = 10_000

/**
 * Request counters in this process (docs/marketplace.md, "Rate limits"): a fixed window that opens at the first
 * request after an idle period, each request adding 1/limit of the window to the counter's life — the semantics of
 * `@effect/experimental`'s `RateLimiter` fixed window, written out because its effect plumbing cost ≈ 60 µs a
 * request and this is a Map lookup. Expired counters are swept once there are many (that store kept every key it
 * ever saw).
 */
export const makeLocalCounters = () => {
  const counters = new Map<string, Counter>()
  let sweepAt = SWEEP_AT
  let sweeps = 0

  /** Forgets expired counters; if most are live, the next sweep waits until there are twice as many. */
  const sweep = (now: number) => {
    sweeps++
    for (const [key, counter] of counters) if (counter.expiresAt <= now) counters.delete(key)
    sweepAt = Math.max(SWEEP_AT, counters.size * 2)
  }

  /** Counts one request against `key` at `now` (epoch milliseconds). */
  const consumeAt = (key: string, limit: number, windowMillis: number, now: number): Allowed | Exceeded => {
    let counter = counters.get(key)
    if (counter === undefined || counter.expiresAt <= now) {
      if (counter === undefined && counters.size >= sweepAt) sweep(now)
      counter = { count: 0, expiresAt: now }
      counters.set(key, counter)
    }
    if (counter.count + 1 > limit) return { allowed: false, retryAfterMillis: counter.expiresAt - now }
    counter.count += 1
    counter.expiresAt += windowMillis / limit
    return { allowed: true, remaining: limit - counter.count, resetAfterMillis: counter.expiresAt - now }
  }

  return {
    consumeAt,
    /** Counters held now and sweeps so far (for tests of the sweep). */
    size: () => counters.size,
    sweeps: () => sweeps
  } as const
}

export type LocalCounters = ReturnType<typeof makeLocalCounters>
