import { Either, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { dateTimeMillis, EventTimestamp, eventMillis } from "../../src/services/product/EventTime.js"

// docs/analytics.md and docs/product-registry.md: an event's timestamp is epoch milliseconds or an ISO 8601
// date-time with its zone (RFC 3339); nothing looser, nothing impossible.
describe("an event's timestamp", () => {
  it("reads RFC 3339 date-times with a zone to the same instant as Date.parse", () => {
    for (const text of [
      "2026-11-27T10:00:00Z",
      "2026-11-27t10:00:00z",
      "2026-11-27T10:00Z",
      "2026-11-27T10:00:00.123Z",
      "2026-11-27T10:00:00.123456789+01:00",
      "2026-11-27T10:00:00.1234567891234Z",
      "1970-01-01T00:00:00Z",
      "2026-11-27T23:59:59-05:30",
      "2024-02-29T00:00:00Z"
    ])
      expect(dateTimeMillis(text), text).toBe(Date.parse(text))
    expect(eventMillis(1_790_000_000_000)).toBe(1_790_000_000_000)
    expect(eventMillis("1970-01-01T00:00:01Z")).toBe(1000)
  })

  it("refuses what Date.parse would read loosely or roll over", () => {
    for (const text of [
      "March 7, 2026",
      "1",
      "2026",
      "2026-11-27",
      "2026-11-27T10:00:00",
      "Tue, 01 Dec 2026 10:00:00 GMT",
      "2026-02-30T00:00:00Z",
      "2025-02-29T00:00:00Z",
      "2026-13-01T00:00:00Z",
      "2026-11-27T24:00:00Z",
      "2026-11-27T10:60:00Z",
      "2026-11-27T10:00:00+0100",
      " 2026-11-27T10:00:00Z",
      "1969-12-31T23:59:59Z",
      "2016-12-31T23:59:60Z",
      ""
    ])
      expect(dateTimeMillis(text), text).toBeUndefined()
  })

  it("epoch milliseconds stop where the ISO form does, 9999-12-31T23:59:59.999Z (past it no Date holds them)", () => {
    const accepts = (value: unknown) => Either.isRight(Schema.decodeUnknownEither(EventTimestamp)(value))
    expect(accepts(0)).toBe(true)
    expect(accepts(Date.UTC(9999, 11, 31, 23, 59, 59, 999))).toBe(true)
    expect(accepts("9999-12-31T23:59:59.999Z")).toBe(true)
    // The same wall time at a negative offset is later than the last instant either form may name.
    expect(accepts("9999-12-31T23:59:59.999-01:00")).toBe(false)
    expect(accepts("9999-12-31T22:59:59.999-01:00")).toBe(true)
    for (const beyond of [253_402_300_800_000, 8_640_000_000_000_001, Number.MAX_SAFE_INTEGER, -1, 1.5]) {
      expect(accepts(beyond), String(beyond)).toBe(false)
    }
  })
})
