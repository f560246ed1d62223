/**
 * The analytics reporter for browsers and apps: `track` events, they are sent in batches to a Keel
 * collector. It never throws and never rejects — not when fetch is missing or fails, not when the
 * collector refuses, not when props hold a cycle or a BigInt. Reporting must never break the app.
 * It has no dependencies (no Effect) so that it stays small in a browser bundle.
 */

export interface ReporterOptions {
  /** The collector URL, e.g. https://api.example.com/api/analytics/web/collect */
  readonly endpoint: string
  readonly siteId: string
  /** Stable per device/browser; generated once per reporter when omitted. */
  readonly visitorId?: string
  readonly sessionId?: string
  /** Events kept while waiting to be sent; past it the oldest are dropped. Default 1000. */
  readonly maxQueue?: number
  /** Events per request. Default 50 (the collector takes at most 500). */
  readonly batchSize?: number
  /** Send automatically this often (ms); 0 disables the timer. Default 5000. */
  readonly flushIntervalMs?: number
  /** Attempts for a batch that meets a network error or a 5xx. Default 5. */
  readonly maxAttempts?: number
  readonly fetch?: typeof globalThis.fetch | undefined
  readonly sendBeacon?: ((url: string, data: string) => boolean) | undefined
  /** Where `pagehide` / `visibilitychange` are listened for; default the browser's window. */
  readonly lifecycle?: EventTargetLike | undefined
  readonly sleep?: (ms: number) => Promise<void>
  readonly random?: () => number
  readonly now?: () => number
  /** Called with what went wrong, for debugging; its own errors are swallowed too. */
  readonly onError?: (error: unknown) => void
}

export interface EventTargetLike {
  addEventListener(type: string, listener: () => void): void
  removeEventListener(type: string, listener: () => void): void
}

export interface Reporter {
  track(name: string, props?: Record<string, unknown>): void
  /** Sends what is queued; resolves when done or given up. Never rejects. */
  flush(): Promise<void>
  /** Stops the timer and listeners and sends what is left (by beacon when possible). Never rejects. */
  shutdown(): Promise<void>
}

interface QueuedEvent {
  readonly event_id: string
  readonly name: string
  readonly timestamp: number
  readonly visitor_id: string
  readonly session_id?: string
  readonly url?: string
  readonly referrer?: string
  readonly props?: unknown
}

/**
 * Browsers refuse keepalive and beacon bodies above 64 KiB in flight, and the web collector's default body
 * limit is 64 KiB: every request body stays under this many bytes (UTF-8), in as many batches as it takes.
 */
const KEEPALIVE_BUDGET = 60 * 1024

/** A body's size on the wire: UTF-8 bytes, not UTF-16 code units (`€` is one unit, three bytes). */
const utf8Bytes = (text: string) => {
  try {
    return new TextEncoder().encode(text).length
  } catch {
    return text.length * 3 // the most a UTF-16 code unit can take in UTF-8
  }
}

const id = (random: () => number) => {
  try {
    const uuid = globalThis.crypto?.randomUUID?.()
    if (typeof uuid === "string") return uuid
  } catch {
    // fall through to the random id
  }
  return `${Date.now().toString(36)}-${Math.floor(random() * 2 ** 52).toString(36)}-${Math.floor(random() * 2 ** 52).toString(36)}`
}

/** How deep `props` may nest (the collectors refuse a body nested past 64 levels; an event's props start at 4). */
const MAX_PROPS_DEPTH = 32

/** How many values one event's props may copy (far more than fit the 60 KiB a body may take). */
const MAX_PROPS_VALUES = 10_000

/**
 * A JSON-safe copy, value by value as `JSON.stringify` would write it, except: a cycle (an object inside itself)
 * becomes "[Circular]" — an object merely used twice is copied twice —, a BigInt its decimal string, anything
 * nested deeper than 32 levels "[Too deep]", every value past the 10,000th "[Too large]"; functions and symbols
 * are dropped. A getter or `toJSON` that throws drops the whole value (undefined).
 */
export const safeProps = (props: unknown): unknown => {
  const ancestors = new Set<object>()
  // Values copied so far: an object shared at every level would otherwise be copied 2^depth times.
  let budget = MAX_PROPS_VALUES
  const copy = (value: unknown, depth: number): unknown => {
    if (--budget < 0) return "[Too large]"
    if (typeof value === "bigint") return value.toString()
    if (typeof value === "function" || typeof value === "symbol" || value === undefined) return undefined
    if (typeof value === "number") return Number.isFinite(value) ? value : null
    if (typeof value !== "object" || value === null) return value
    const json = (value as { toJSON?: unknown }).toJSON
    if (typeof json === "function") {
      const replaced: unknown = json.call(value)
      if (replaced !== value) return copy(replaced, depth)
    }
    if (ancestors.has(value)) return "[Circular]"
    if (depth >= MAX_PROPS_DEPTH) return "[Too deep]"
    ancestors.add(value)
    try {
      if (Array.isArray(value)) return value.map((item) => copy(item, depth + 1) ?? null)
      const out: Record<string, unknown> = {}
      for (const key of Object.keys(value)) {
        const item = copy((value as Record<string, unknown>)[key], depth + 1)
        // defineProperty: a `__proto__` key stays a key (an assignment would set the copy's prototype).
        if (item !== undefined)
          Object.defineProperty(out, key, { value: item, enumerable: true, writable: true, configurable: true })
      }
      return out
    } finally {
      ancestors.delete(value)
    }
  }
  try {
    return copy(props, 0)
  } catch {
    return undefined
  }
}

/** The collectors take an event name of at most 200 characters (UTF-16 units); a cut never splits a pair. */
const MAX_NAME = 200
const nameWithin = (name: string) => {
  if (name.length <= MAX_NAME) return name
  const cut = name.slice(0, MAX_NAME)
  return /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut
}

/** What a value is, for a message: its type, never its content (a name may be anything the app passed). */
const describe = (value: unknown) =>
  value === null ? "null" : Array.isArray(value) ? "an array" : value === "" ? "empty" : `a ${typeof value}`

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** What the collectors take as an id (`visitor_id`, `session_id`): 1 to 128 characters. */
const isId = (value: unknown): value is string => typeof value === "string" && value.length >= 1 && value.length <= 128

const browserContext = () => {
  try {
    const location = (globalThis as { location?: { href?: string } }).location
    const document = (globalThis as { document?: { referrer?: string } }).document
    return {
      url: typeof location?.href === "string" ? location.href : undefined,
      referrer: typeof document?.referrer === "string" && document.referrer !== "" ? document.referrer : undefined
    }
  } catch {
    return { url: undefined, referrer: undefined }
  }
}

const defaultBeacon = () => {
  try {
    const navigator = (globalThis as { navigator?: { sendBeacon?: (url: string, data: string) => boolean } }).navigator
    return typeof navigator?.sendBeacon === "function" ? navigator.sendBeacon.bind(navigator) : undefined
  } catch {
    return undefined
  }
}

const defaultLifecycle = (): EventTargetLike | undefined => {
  const candidate = (globalThis as { window?: EventTargetLike }).window
  return candidate && typeof candidate.addEventListener === "function" ? candidate : undefined
}

export const createReporter = (given: ReporterOptions): Reporter => {
  // Called from plain JavaScript with nothing: a reporter that reports every send's failure through nothing.
  const options: ReporterOptions = typeof given === "object" && given !== null ? given : ({} as ReporterOptions)
  const random = options.random ?? Math.random
  const now = options.now ?? Date.now
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)))
  const maxQueue = Math.max(1, options.maxQueue ?? 1000)
  const batchSize = Math.min(500, Math.max(1, options.batchSize ?? 50))
  const maxAttempts = Math.max(1, options.maxAttempts ?? 5)
  const visitorId = isId(options.visitorId) ? options.visitorId : id(random)
  const sessionId = isId(options.sessionId) ? options.sessionId : undefined
  const queue: Array<QueuedEvent> = []
  let flushing: Promise<void> | undefined
  let stopped = false

  const report = (error: unknown) => {
    try {
      options.onError?.(error)
    } catch {
      // a failing error hook must not break reporting either
    }
  }

  if (options.visitorId !== undefined && options.visitorId !== visitorId)
    report(new TypeError("visitorId must be 1 to 128 characters: a generated one is used"))
  if (options.sessionId !== undefined && sessionId === undefined)
    report(new TypeError("sessionId must be 1 to 128 characters: events are sent without one"))

  const fetcher = () => {
    try {
      return options.fetch ?? (typeof globalThis.fetch === "function" ? globalThis.fetch.bind(globalThis) : undefined)
    } catch {
      return undefined
    }
  }

  /**
   * "done": sent, or refused for good; "retry": worth another attempt (network error, 5xx); "too-large": the
   * collector's body limit is below the reporter's budget (413), so the batch is worth splitting.
   */
  const sendOnce = async (body: string): Promise<"done" | "retry" | "too-large"> => {
    const fetch = fetcher()
    // Nothing can send (no fetch, no endpoint): drop rather than grow for ever.
    if (fetch === undefined || typeof options.endpoint !== "string") return "done"
    try {
      const response = await fetch(options.endpoint, {
        method: "POST",
        headers: { "content-type": "text/plain;charset=UTF-8" },
        body,
        keepalive: utf8Bytes(body) < KEEPALIVE_BUDGET
      })
      if (response.status >= 500) {
        report(new Error(`collector answered ${response.status}`))
        return "retry"
      }
      if (response.status === 413) return "too-large"
      if (response.status >= 400) {
        report(new Error(`collector refused the batch: ${response.status}`))
        return "done"
      }
      await reportRejected(response)
      return "done"
    } catch (error) {
      report(error)
      return "retry"
    }
  }

  /** A batch the collector took may still have refused some events, each listed with its reason: say so. */
  const reportRejected = async (response: Response) => {
    try {
      const answer = (await response.json()) as { rejected?: unknown }
      const rejected = Array.isArray(answer?.rejected) ? (answer.rejected as ReadonlyArray<unknown>) : []
      if (rejected.length > 0)
        report(Object.assign(new Error(`collector rejected ${rejected.length} event(s)`), { rejected }))
    } catch {
      // an answer without a readable body (a proxy's, a test double's) says nothing more
    }
  }

  const encode = (events: ReadonlyArray<QueuedEvent>) => JSON.stringify({ site_id: options.siteId, events })

  /**
   * The next batch off the queue: at most `batchSize` events whose body stays under the budget, halved until it
   * does (the rest go back to the queue's front, in order); an event over the budget alone goes alone.
   */
  const takeBatch = () => {
    let events = queue.splice(0, batchSize)
    let body = encode(events)
    while (events.length > 1 && utf8Bytes(body) >= KEEPALIVE_BUDGET) {
      const half = Math.ceil(events.length / 2)
      queue.unshift(...events.slice(half))
      events = events.slice(0, half)
      body = encode(events)
    }
    return { events, body }
  }

  /** Sends one batch with retries; a batch over the collector's body limit is sent again in halves. */
  const sendBatch = async (events: ReadonlyArray<QueuedEvent>, body: string): Promise<void> => {
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      const outcome = await sendOnce(body)
      if (outcome === "done") return
      if (outcome === "too-large") {
        if (events.length === 1) return report(new Error("collector refused an event as too large: 413"))
        const half = Math.ceil(events.length / 2)
        for (const part of [events.slice(0, half), events.slice(half)]) await sendBatch(part, encode(part))
        return
      }
      if (attempt < maxAttempts) {
        // 1 s, 2 s, 4 s… capped at 30 s, each ±50 % so that clients do not retry in step.
        const base = Math.min(30_000, 1000 * 2 ** (attempt - 1))
        await sleep(base * (0.5 + random()))
      }
    }
  }

  const drain = async () => {
    while (queue.length > 0) {
      const { events, body } = takeBatch()
      await sendBatch(events, body)
    }
  }

  const flush = (): Promise<void> => {
    try {
      if (flushing === undefined) {
        flushing = drain()
          .catch(report)
          .finally(() => {
            flushing = undefined
          })
      }
      return flushing.catch(() => undefined)
    } catch (error) {
      report(error)
      return Promise.resolve()
    }
  }

  /** On page hide a fetch may be cut off; a beacon is queued by the browser and survives the page. */
  const beaconAll = () => {
    try {
      const beacon = options.sendBeacon ?? defaultBeacon()
      if (beacon === undefined) return void flush()
      while (queue.length > 0) {
        const { events, body } = takeBatch()
        if (!beacon(options.endpoint, body)) {
          queue.unshift(...events)
          return void flush()
        }
      }
    } catch (error) {
      report(error)
    }
  }

  const lifecycle = options.lifecycle ?? defaultLifecycle()
  const onHide = () => {
    try {
      const document = (globalThis as { document?: { visibilityState?: string } }).document
      if (document?.visibilityState === undefined || document.visibilityState === "hidden") beaconAll()
    } catch (error) {
      report(error)
    }
  }
  try {
    lifecycle?.addEventListener("pagehide", beaconAll)
    lifecycle?.addEventListener("visibilitychange", onHide)
  } catch (error) {
    report(error)
  }

  const interval = options.flushIntervalMs ?? 5000
  let timer: ReturnType<typeof setInterval> | undefined
  try {
    if (interval > 0) {
      timer = setInterval(() => void flush(), interval)
      ;(timer as { unref?: () => void }).unref?.()
    }
  } catch (error) {
    report(error)
  }

  return {
    track(name, props) {
      try {
        if (stopped) return
        // A name that is no text (`track(undefined)` from plain JavaScript) names no event: stored as "undefined"
        // it would count as one. The event is not sent.
        if (typeof name !== "string" || name === "")
          return report(
            new TypeError(`track(name): the name must be 1 to 200 characters of text, not ${describe(name)}; not sent`)
          )
        const eventName = nameWithin(name)
        if (eventName !== name)
          report(new TypeError(`track("${eventName}…"): a name over 200 characters is cut to its first 200 characters`))
        const context = browserContext()
        // The collectors take props as an object: anything else would have the event refused, so it goes without.
        const cleanProps = props === undefined ? undefined : safeProps(props)
        if (props !== undefined && !isPlainObject(cleanProps))
          report(new TypeError(`track("${eventName}"): props must be an object; sent without them`))
        const clock = Number(now())
        const at = Number.isFinite(clock) && clock >= 0 ? Math.floor(clock) : Date.now()
        if (at !== clock)
          report(new TypeError(`now() gave ${clock}: events carry whole epoch milliseconds (${at} sent)`))
        const event: QueuedEvent = {
          event_id: id(random),
          name: eventName,
          // Epoch milliseconds are an integer (performance.timeOrigin + performance.now() is not).
          timestamp: at,
          visitor_id: visitorId,
          ...(sessionId === undefined ? {} : { session_id: sessionId }),
          ...(context.url === undefined ? {} : { url: context.url }),
          ...(context.referrer === undefined ? {} : { referrer: context.referrer }),
          ...(isPlainObject(cleanProps) ? { props: cleanProps } : {})
        }
        queue.push(event)
        if (queue.length > maxQueue) queue.splice(0, queue.length - maxQueue)
        if (queue.length >= batchSize) void flush()
      } catch (error) {
        report(error)
      }
    },
    flush,
    async shutdown() {
      try {
        stopped = true
        if (timer !== undefined) clearInterval(timer)
        lifecycle?.removeEventListener("pagehide", beaconAll)
        lifecycle?.removeEventListener("visibilitychange", onHide)
        if ((options.sendBeacon ?? defaultBeacon()) !== undefined) beaconAll()
        await flush()
      } catch (error) {
        report(error)
      }
    }
  }
}
