import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Either, FastCheck as fc, Schema } from "effect"
import { AnalyticsEvent, acceptEventFast } from "../support/keel.js"

const bySchema = Schema.decodeUnknownEither(AnalyticsEvent, { errors: "all" })

/** What the schema and the fast path must agree on: the value and the JSON stored for utm and props. */
const stored = (event: AnalyticsEvent) => ({
  ...event,
  utm: JSON.stringify(event.utm),
  props: JSON.stringify(event.props)
})

const FIELDS = ["event_id", "name", "timestamp", "visitor_id", "session_id", "url", "referrer", "utm", "props"]

/** Valid events (from the schema itself), events in the usual wire shape, and either with one field replaced. */
/** Mostly valid text, with the boundaries on both sides of the limit. */
const text = (max: number) =>
  fc.oneof(
    { weight: 3, arbitrary: fc.string({ minLength: 1, maxLength: Math.min(max, 40) }) },
    { weight: 1, arbitrary: fc.constantFrom("", "x".repeat(max), "x".repeat(max + 1), "é".repeat(max)) }
  )
const usual = fc.record(
  {
    event_id: text(128),
    name: text(200),
    timestamp: fc.oneof(
      { weight: 4, arbitrary: fc.integer({ min: 0, max: 2 ** 53 - 1 }) },
      { weight: 1, arbitrary: fc.constantFrom(-1, 2 ** 53, 1.5, Number.NaN, -0) },
      { weight: 1, arbitrary: fc.double() }
    ),
    visitor_id: text(128),
    session_id: text(128),
    url: fc.oneof(fc.webUrl(), text(2048)),
    referrer: fc.oneof(fc.webUrl(), text(2048)),
    utm: fc.dictionary(
      fc.constantFrom("source", "medium", "campaign", "content", "term", "other"),
      fc.oneof({ weight: 4, arbitrary: text(200) }, { weight: 1, arbitrary: fc.integer() })
    ),
    props: fc.oneof(
      { weight: 4, arbitrary: fc.dictionary(fc.string(), fc.jsonValue()) },
      { weight: 1, arbitrary: fc.oneof(fc.array(fc.integer()), fc.constant(null), fc.string()) }
    )
  },
  { requiredKeys: ["event_id", "name", "timestamp", "visitor_id"] }
)
const candidates = fc.oneof(
  Arbitrary.make(AnalyticsEvent),
  usual,
  fc
    .tuple(fc.oneof(Arbitrary.make(AnalyticsEvent), usual), fc.constantFrom(...FIELDS), fc.jsonValue())
    .map(([event, field, value]) => ({ ...event, [field]: value })),
  fc.jsonValue()
)

describe("the collector's written-out event check agrees with AnalyticsEvent", () => {
  it("never accepts what the schema refuses, and accepts to the same stored value", () => {
    let fastAccepted = 0
    fc.assert(
      fc.property(candidates, (candidate) => {
        const wire = JSON.parse(JSON.stringify(candidate) ?? "null")
        const fast = acceptEventFast(wire)
        if (fast === undefined) return
        fastAccepted++
        const schema = bySchema(wire)
        expect(Either.isRight(schema), `the schema refuses ${JSON.stringify(wire)}`).toBe(true)
        if (Either.isRight(schema)) expect(stored(fast)).toStrictEqual(stored(schema.right))
      }),
      { numRuns: 3_000, seed: 24 }
    )
    // The comparison means something only if the fast path accepted a good share of the runs.
    expect(fastAccepted).toBeGreaterThan(300)
  })

  it("takes the usual browser event itself; refusals are left to the schema", () => {
    const event = {
      event_id: "e-1",
      name: "pageview",
      timestamp: 1_790_000_000_000,
      visitor_id: "v-1",
      url: "https://keel.dev/docs",
      utm: { medium: "email", source: "newsletter", extra: "dropped" },
      props: { plan: "pro", n: 3 },
      unknown: "dropped"
    }
    expect(acceptEventFast(event)).toStrictEqual({
      event_id: "e-1",
      name: "pageview",
      timestamp: 1_790_000_000_000,
      visitor_id: "v-1",
      url: "https://keel.dev/docs",
      utm: { source: "newsletter", medium: "email" },
      props: { plan: "pro", n: 3 }
    })
    expect(acceptEventFast({ ...event, timestamp: "2026-11-26T12:00:00Z" })).toBeUndefined()
    expect(acceptEventFast({ ...event, name: "" })).toBeUndefined()
    expect(acceptEventFast({ ...event, timestamp: 1.5 })).toBeUndefined()
    expect(acceptEventFast([event])).toBeUndefined()
  })
})
