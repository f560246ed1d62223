import { HttpServer } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createReporter, type ReporterOptions, safeProps } from "keel/client"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { HttpTest } from "../support/http.js"

interface Call {
  readonly url: string
  readonly init: RequestInit
  readonly body: { site_id: string; events: Array<Record<string, unknown>> }
}

/** A fetch that records calls and answers what `answer` says (a status, or a thrown/rejected error). */
const fakeFetch = (answer: (n: number) => number | Error | "throw-sync") => {
  const calls: Array<Call> = []
  const fetch = ((url: string, init: RequestInit) => {
    const n = calls.length
    calls.push({ url, init, body: JSON.parse(String(init.body)) })
    const a = answer(n)
    if (a === "throw-sync") throw new TypeError("fetch exploded synchronously")
    if (a instanceof Error) return Promise.reject(a)
    return Promise.resolve(new Response(null, { status: a }))
  }) as unknown as typeof globalThis.fetch
  return { fetch, calls }
}

const base = (extra: Partial<ReporterOptions> = {}): ReporterOptions => ({
  endpoint: "http://127.0.0.1:9/api/analytics/web/collect",
  siteId: "site-1",
  flushIntervalMs: 0,
  sleep: () => Promise.resolve(),
  lifecycle: undefined,
  sendBeacon: undefined,
  ...extra
})

/** A page's lifecycle events, fired by hand (`listeners.get("pagehide")?.()`). */
const fakeLifecycle = () => {
  const listeners = new Map<string, () => void>()
  const lifecycle = {
    addEventListener: (type: string, fn: () => void) => void listeners.set(type, fn),
    removeEventListener: (type: string) => void listeners.delete(type)
  }
  return { listeners, lifecycle }
}

const unhandled: Array<unknown> = []
const onUnhandled = (reason: unknown) => unhandled.push(reason)
beforeEach(() => {
  unhandled.length = 0
  process.on("unhandledRejection", onUnhandled)
})
afterEach(async () => {
  await new Promise((resolve) => setTimeout(resolve, 20))
  process.off("unhandledRejection", onUnhandled)
  expect(unhandled).toEqual([])
})

describe("the client reporter never throws and never rejects", () => {
  it("when fetch is missing", async () => {
    const original = globalThis.fetch
    // @ts-expect-error: simulating an environment without fetch
    globalThis.fetch = undefined
    try {
      const reporter = createReporter(base())
      reporter.track("a")
      await expect(reporter.flush()).resolves.toBeUndefined()
      await expect(reporter.shutdown()).resolves.toBeUndefined()
    } finally {
      globalThis.fetch = original
    }
  })

  it("when fetch throws synchronously, or rejects: network errors are retried, then given up", async () => {
    const sync = fakeFetch(() => "throw-sync")
    const r1 = createReporter(base({ fetch: sync.fetch, maxAttempts: 3 }))
    r1.track("a")
    await expect(r1.flush()).resolves.toBeUndefined()
    expect(sync.calls.length).toBe(3)

    const rejecting = fakeFetch((n) => (n < 2 ? new TypeError("network down") : 202))
    const waits: Array<number> = []
    const r2 = createReporter(
      base({ fetch: rejecting.fetch, sleep: async (ms) => void waits.push(ms), random: () => 0.5 })
    )
    r2.track("a")
    await r2.flush()
    expect(rejecting.calls.length).toBe(3)
    expect(waits).toEqual([1000, 2000]) // 1 s, 2 s… (random 0.5 = no jitter)
    expect(rejecting.calls[2]?.body.events.length).toBe(1)
  })

  it("5xx is retried with jittered backoff; 4xx (413 included) is never retried", async () => {
    const fiveHundred = fakeFetch((n) => (n === 0 ? 500 : 202))
    const waits: Array<number> = []
    const r1 = createReporter(
      base({ fetch: fiveHundred.fetch, sleep: async (ms) => void waits.push(ms), random: () => 0.9 })
    )
    r1.track("a")
    await r1.flush()
    expect(fiveHundred.calls.length).toBe(2)
    expect(waits[0]).toBeCloseTo(1400)
    for (const status of [400, 403, 413, 422]) {
      const refused = fakeFetch(() => status)
      const errors: Array<unknown> = []
      const r = createReporter(base({ fetch: refused.fetch, onError: (e) => errors.push(e) }))
      r.track("a")
      await expect(r.flush()).resolves.toBeUndefined()
      expect(refused.calls.length).toBe(1)
      expect(String(errors[0])).toContain(String(status))
    }
  })

  it("when props hold a cycle or a BigInt, or the error hook itself throws", async () => {
    const ok = fakeFetch(() => 202)
    const reporter = createReporter(
      base({
        fetch: ok.fetch,
        onError: () => {
          throw new Error("hook exploded")
        }
      })
    )
    const cyclic: Record<string, unknown> = { plan: "team" }
    cyclic.self = cyclic
    reporter.track("signup", { cyclic, big: 10n ** 30n, fn: () => 1 })
    // Refused (no name), told to the hook, which throws: still nothing escapes.
    reporter.track(undefined as unknown as string, undefined)
    await reporter.flush()
    const events = ok.calls[0]?.body.events ?? []
    expect(events[0]?.props).toEqual({
      cyclic: { plan: "team", self: "[Circular]" },
      big: "1000000000000000000000000000000"
    })
    expect(events.length).toBe(1)
    const failing = fakeFetch(() => new Error("x"))
    const r2 = createReporter(
      base({
        fetch: failing.fetch,
        maxAttempts: 1,
        onError: () => {
          throw new Error("again")
        }
      })
    )
    r2.track("a")
    await expect(r2.flush()).resolves.toBeUndefined()
  })
})

describe("the client reporter keeps every event the collector can take", () => {
  it('copies an object used twice twice (only a cycle is "[Circular]"), and cuts props nested past 32 levels', () => {
    const shared = { x: 1 }
    expect(safeProps({ a: shared, b: shared, arr: [shared, shared] })).toEqual({
      a: { x: 1 },
      b: { x: 1 },
      arr: [{ x: 1 }, { x: 1 }]
    })
    const deep: Record<string, unknown> = {}
    let cursor = deep
    for (let i = 0; i < 70; i++) {
      cursor.a = {}
      cursor = cursor.a as Record<string, unknown>
    }
    let depth = 0
    let copied = safeProps(deep) as Record<string, unknown> | string
    while (typeof copied === "object") {
      copied = copied.a as Record<string, unknown> | string
      depth++
    }
    expect(copied).toBe("[Too deep]")
    expect(depth).toBe(32)
    // As JSON.stringify writes them: dates by toJSON, non-finite numbers as null, undefined items as null.
    expect(safeProps({ at: new Date(0), n: Number.NaN, list: [undefined, 1] })).toEqual({
      at: "1970-01-01T00:00:00.000Z",
      n: null,
      list: [null, 1]
    })
    // An object shared at every level is a DAG of 2^depth paths: the copy stops at a budget, it never hangs.
    let dag: Record<string, unknown> = { leaf: 1 }
    for (let i = 0; i < 30; i++) dag = { x: dag, y: dag }
    expect(JSON.stringify(safeProps({ dag })).length).toBeLessThan(500_000)
    expect(JSON.stringify(safeProps({ dag }))).toContain("[Too large]")
    const proto = safeProps(JSON.parse('{"__proto__": {"polluted": true}}')) as object
    expect(Object.keys(proto)).toEqual(["__proto__"])
    expect(Object.getPrototypeOf(proto)).toBe(Object.prototype)
  })

  it("sends props that are no object without them, and a bad visitor id or clock replaced, telling onError", async () => {
    const ok = fakeFetch(() => 202)
    const errors: Array<unknown> = []
    const reporter = createReporter(
      base({ fetch: ok.fetch, visitorId: "", now: () => 1_700_000_000_000.75, onError: (e) => errors.push(e) })
    )
    for (const props of ["str", [1], null, 5]) reporter.track("p", props as unknown as Record<string, unknown>)
    await reporter.flush()
    const events = ok.calls[0]?.body.events ?? []
    expect(events.length).toBe(4)
    for (const event of events) {
      expect(event.props).toBeUndefined()
      expect(event.timestamp).toBe(1_700_000_000_000)
      expect(typeof event.visitor_id === "string" && event.visitor_id.length > 0).toBe(true)
    }
    expect(errors.map(String).filter((e) => e.includes("props must be an object")).length).toBe(4)
    expect(errors.map(String).some((e) => e.includes("visitorId"))).toBe(true)
    expect(errors.map(String).filter((e) => e.includes("whole epoch milliseconds")).length).toBe(4)
  })

  it("refuses an event whose name is no text (undefined, null, a number, an object, empty), telling onError", async () => {
    const ok = fakeFetch(() => 202)
    const errors: Array<unknown> = []
    const reporter = createReporter(base({ fetch: ok.fetch, onError: (e) => errors.push(e) }))
    const names: ReadonlyArray<unknown> = [undefined, null, 42, {}, ["a"], "", Symbol("s")]
    for (const name of names) reporter.track(name as string)
    reporter.track("kept")
    reporter.track("x".repeat(250))
    await reporter.flush()
    const sent = ok.calls.flatMap((call) => call.body.events.map((event) => event.name))
    expect(sent).toEqual(["kept", "x".repeat(200)])
    const messages = errors.map(String)
    expect(messages.filter((m) => m.includes("track(name): the name must be 1 to 200 characters of text")).length).toBe(
      names.length
    )
    expect(messages.some((m) => m.includes("cut to its first 200 characters"))).toBe(true)
  })

  it("tells onError about the events a collector took the batch without (202 with `rejected`)", async () => {
    const calls: Array<string> = []
    const fetch = ((_url: string, init: RequestInit) => {
      calls.push(String(init.body))
      return Promise.resolve(
        new Response(JSON.stringify({ accepted: 1, rejected: [{ index: 1, reason: "name: too long" }] }), {
          status: 202
        })
      )
    }) as unknown as typeof globalThis.fetch
    const errors: Array<unknown> = []
    const reporter = createReporter(base({ fetch, onError: (e) => errors.push(e) }))
    reporter.track("a")
    reporter.track("b")
    await reporter.flush()
    expect(calls.length).toBe(1)
    expect(String(errors[0])).toContain("rejected 1 event")
    expect((errors[0] as { rejected: unknown }).rejected).toEqual([{ index: 1, reason: "name: too long" }])
  })

  it("a batch answered 413 (a collector's limit below the reporter's budget) is sent again in halves", async () => {
    // The collector takes at most 2 events a body here.
    const calls: Array<number> = []
    const fetch = ((_url: string, init: RequestInit) => {
      const size = JSON.parse(String(init.body)).events.length as number
      calls.push(size)
      return Promise.resolve(new Response(null, { status: size > 2 ? 413 : 202 }))
    }) as unknown as typeof globalThis.fetch
    const errors: Array<unknown> = []
    const reporter = createReporter(base({ fetch, onError: (e) => errors.push(e) }))
    for (let i = 0; i < 5; i++) reporter.track(`e${i}`)
    await reporter.flush()
    expect(calls).toEqual([5, 3, 2, 1, 2])
    expect(errors).toEqual([])
  })
})

describe("the client reporter called from plain JavaScript", () => {
  it("without options, tracks and flushes without throwing", async () => {
    const reporter = createReporter(undefined as unknown as ReporterOptions)
    reporter.track("a")
    await expect(reporter.flush()).resolves.toBeUndefined()
    await expect(reporter.shutdown()).resolves.toBeUndefined()
  })
})

describe("the client reporter's batching", () => {
  it("gives each event its own id, batches by size, keeps a bounded queue, sends keepalive only under 64 KiB", async () => {
    const ok = fakeFetch(() => 202)
    const reporter = createReporter(base({ fetch: ok.fetch, batchSize: 10, maxQueue: 25, visitorId: "v-1" }))
    for (let i = 0; i < 40; i++) reporter.track(`e${i}`)
    await reporter.flush()
    const sent = ok.calls.flatMap((c) => c.body.events)
    expect(new Set(sent.map((e) => e.event_id)).size).toBe(sent.length)
    expect(sent.every((e) => e.visitor_id === "v-1")).toBe(true)
    expect(ok.calls.every((c) => c.body.events.length <= 10)).toBe(true)
    expect(sent.map((e) => e.name)).toContain("e39") // the newest are kept when the queue overflows
    expect(ok.calls[0]?.init.keepalive).toBe(true)
    expect(ok.calls[0]?.init.headers).toEqual({ "content-type": "text/plain;charset=UTF-8" })
  })

  it("keeps every body under 60 KiB of UTF-8 (the collector's 64 KiB default), in as many batches as it takes", async () => {
    const bytes = (body: unknown) => Buffer.byteLength(String(body))
    const big = fakeFetch(() => 202)
    const heavy = createReporter(base({ fetch: big.fetch, batchSize: 100 }))
    // 40 events of 700 `€` each: 2,100 bytes of props apiece, 84 KB together, but only 28 K UTF-16 units.
    for (let i = 0; i < 40; i++) heavy.track(`big-${i}`, { t: "€".repeat(700) })
    await heavy.flush()
    expect(big.calls.length).toBeGreaterThan(1)
    expect(big.calls.every((c) => bytes(c.init.body) < 60 * 1024 && c.init.keepalive === true)).toBe(true)
    expect(big.calls.flatMap((c) => c.body.events.map((e) => e.name))).toEqual(
      Array.from({ length: 40 }, (_, i) => `big-${i}`)
    )

    // One event over the budget alone goes alone (the collector's answer decides), without keepalive.
    const huge = fakeFetch(() => 202)
    const lone = createReporter(base({ fetch: huge.fetch }))
    lone.track("small")
    lone.track("huge", { pad: "x".repeat(70_000) })
    lone.track("after")
    await lone.flush()
    expect(huge.calls.map((c) => c.body.events.map((e) => e.name))).toEqual([["small"], ["huge"], ["after"]])
    expect(huge.calls.map((c) => c.init.keepalive)).toEqual([true, false, true])
  })

  it("on page hide, splits the beacons by bytes too", async () => {
    const { listeners, lifecycle } = fakeLifecycle()
    const beacons: Array<string> = []
    const reporter = createReporter(
      base({
        lifecycle,
        sendBeacon: (_url, data) => Buffer.byteLength(data) < 64 * 1024 && beacons.push(data) > 0
      })
    )
    for (let i = 0; i < 40; i++) reporter.track(`e${i}`, { t: "€".repeat(700) })
    listeners.get("pagehide")?.()
    expect(beacons.length).toBeGreaterThan(1)
    expect(beacons.flatMap((b) => JSON.parse(b).events.map((e: { name: string }) => e.name))).toEqual(
      Array.from({ length: 40 }, (_, i) => `e${i}`)
    )
  })

  it("on page hide, sends what is queued by beacon", async () => {
    const { listeners, lifecycle } = fakeLifecycle()
    const beacons: Array<string> = []
    const reporter = createReporter(base({ lifecycle, sendBeacon: (_url, data) => beacons.push(data) > 0 }))
    reporter.track("a")
    reporter.track("b")
    listeners.get("pagehide")?.()
    expect(beacons.length).toBe(1)
    expect(JSON.parse(beacons[0] ?? "{}").events.map((e: { name: string }) => e.name)).toEqual(["a", "b"])
    await reporter.shutdown()
    expect(listeners.size).toBe(0)
  })
})

layer(HttpTest({ env: { KEEL_COLLECT_SITES: "site-live" } }), { timeout: "30 seconds", excludeTestServices: true })(
  "the client reporter against a real collector",
  (it) => {
    it.effect("events tracked are stored once, even when flushed twice", () =>
      Effect.gen(function* () {
        const server = yield* HttpServer.HttpServer
        const port = server.address._tag === "TcpAddress" ? server.address.port : 0
        const reporter = createReporter({
          endpoint: `http://127.0.0.1:${port}/api/analytics/web/collect`,
          siteId: "site-live",
          flushIntervalMs: 0
        })
        for (let i = 0; i < 120; i++) reporter.track("pageview", { i })
        // Props nested 70 deep would make the collector refuse the whole body (JSON_TOO_DEEP): cut, all sent.
        const deep: Record<string, unknown> = {}
        let cursor = deep
        for (let i = 0; i < 70; i++) {
          cursor.a = {}
          cursor = cursor.a as Record<string, unknown>
        }
        reporter.track("deep", deep)
        yield* Effect.promise(() => reporter.flush())
        yield* Effect.promise(() => reporter.shutdown())
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ n: number }>`SELECT count(*) AS n FROM analytics_events WHERE site_id = 'site-live'`
        assert.strictEqual(rows[0]?.n, 121)
      })
    )
  }
)
