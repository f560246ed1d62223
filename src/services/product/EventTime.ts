import { Schema } from "effect"

/**
 * RFC 3339's date-time (the ISO 8601 profile the web uses): a calendar date, `T`, a time with optional seconds
 * and fraction, and a zone — `Z` or an offset. A zone is required: without one, the instant would depend on
 * the server's time zone. Looser forms `Date.parse` also reads (`March 7, 2026`, `2026`, `1`, a date alone)
 * are refused, as are impossible dates (`2026-02-30`), which it would roll over into the next month, leap
 * seconds (`23:59:60`, which `Date.parse` cannot read) and instants before 1970.
 */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(?:Z|[+-](\d{2}):(\d{2}))$/i

const daysIn = (year: number, month: number) => new Date(Date.UTC(year, month, 0)).getUTCDate()

/** Whether the fields name a moment of the calendar (`2026-02-30`, `2026-04-31` and `T25:00` do not). */
export const isCalendarTime = (year: number, month: number, day: number, hour = 0, minute = 0, second = 0) =>
  month >= 1 && month <= 12 && day >= 1 && day <= daysIn(year, month) && hour <= 23 && minute <= 59 && second <= 59

/** The last instant either form can name: 9999-12-31T23:59:59.999Z (an ISO year has four digits). */
export const LATEST_EVENT_MILLIS = Date.UTC(9999, 11, 31, 23, 59, 59, 999)

/** The instant of an RFC 3339 date-time in epoch milliseconds, or undefined for anything else. */
export const dateTimeMillis = (text: string): number | undefined => {
  const match = DATE_TIME.exec(text)
  if (match === null) return undefined
  const [year, month, day, hour, minute, second, offsetHours, offsetMinutes] = match
    .slice(1)
    .map((part) => (part === undefined ? 0 : Number(part)))
  if (!isCalendarTime(year!, month!, day!, hour, minute, second)) return undefined
  if (offsetHours! > 23 || offsetMinutes! > 59) return undefined
  const millis = Date.parse(text)
  // Before 1970 is refused, as negative epoch milliseconds are; so is a negative offset carrying the last day
  // of year 9999 past the last instant the epoch form may name.
  return Number.isNaN(millis) || millis < 0 || millis > LATEST_EVENT_MILLIS ? undefined : millis
}

const TIMESTAMP_EXPECTED =
  "expected epoch milliseconds (a non-negative integer) or an ISO 8601 date-time with a zone (2026-11-27T10:00:00Z)"

/**
 * When a client-reported event happened: epoch milliseconds, or an RFC 3339 date-time with its zone. Whatever
 * fails, the refusal is the one sentence above (not one line per member of the union).
 */
export const EventTimestamp = Schema.Union(
  Schema.Number.pipe(Schema.int(), Schema.between(0, LATEST_EVENT_MILLIS)),
  Schema.String.pipe(
    Schema.filter((text) => dateTimeMillis(text) !== undefined, {
      // Generated values (property tests) are date-times: random strings would almost never pass the filter.
      arbitrary: () => (fc) =>
        fc.integer({ min: 0, max: Date.UTC(2100, 0, 1) }).map((millis) => new Date(millis).toISOString())
    })
  )
).annotations({ message: () => ({ message: TIMESTAMP_EXPECTED, override: true }) })

/** An accepted `EventTimestamp` in epoch milliseconds. */
export const eventMillis = (timestamp: number | string): number =>
  typeof timestamp === "number" ? timestamp : (dateTimeMillis(timestamp) ?? Number.NaN)
