import { Clock, Effect, Either, type ParseResult, Schema } from "effect"
import { CollectBatch, CollectResult, MalformedBatch, SiteNotAllowed } from "../../contracts/product/Analytics.js"
import { BoundedText as Text } from "../../contracts/shared/Text.js"
import { GroupCommit } from "../platform/GroupCommit.js"
import { hotSpan } from "../platform/HotSpan.js"
import { placeholders, type SqlParam } from "../platform/SqlDirect.js"
import { formatIssues } from "../platform/Validation.js"
import { EventTimestamp, eventMillis, LATEST_EVENT_MILLIS } from "./EventTime.js"
import { ProductConfig } from "./ProductConfig.js"
import { pagePath, referrerHost, utmSource } from "./ReadoutSql.js"

/** The longest text of each event field: the schema below and the written-out check (acceptEventFast) share them. */
const MAX = { id: 128, name: 200, url: 2048, utm: 200 } as const

export const Utm = Schema.Struct({
  source: Schema.optional(Text(MAX.utm)),
  medium: Schema.optional(Text(MAX.utm)),
  campaign: Schema.optional(Text(MAX.utm)),
  content: Schema.optional(Text(MAX.utm)),
  term: Schema.optional(Text(MAX.utm))
})

export const AnalyticsEvent = Schema.Struct({
  event_id: Text(MAX.id),
  name: Text(MAX.name),
  timestamp: EventTimestamp,
  visitor_id: Text(MAX.id),
  session_id: Schema.optional(Text(MAX.id)),
  url: Schema.optional(Text(MAX.url)),
  referrer: Schema.optional(Text(MAX.url)),
  utm: Schema.optional(Utm),
  props: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
})
export type AnalyticsEvent = typeof AnalyticsEvent.Type

export type CollectorKind = "web" | "mobile"

/** The stored columns of an event and of an attribution, in the order their rows are built. */
const EVENT_COLUMNS = [
  "site_id",
  "event_id",
  "collector",
  "name",
  "occurred_at",
  "visitor_id",
  "session_id",
  "url",
  "referrer",
  "utm",
  "props",
  "received_at",
  "referrer_host",
  "page",
  "utm_source"
]
const ATTRIBUTION_COLUMNS = [
  "site_id",
  "visitor_id",
  "first_event_id",
  "first_seen_at",
  "landing_url",
  "referrer",
  "utm_source",
  "utm_medium",
  "utm_campaign",
  "utm_content",
  "utm_term"
]

const EVENT_COLUMN_LIST = EVENT_COLUMNS.join(", ")
const ATTRIBUTION_COLUMN_LIST = ATTRIBUTION_COLUMNS.join(", ")

/** An event's time in epoch milliseconds, whichever form the client sent. */
const occurredAt = (event: AnalyticsEvent) => eventMillis(event.timestamp)

const describe = (error: ParseResult.ParseError) => formatIssues(error, { limit: 3, withoutValues: true })

const decodeBatch = Schema.decodeUnknownEither(CollectBatch, { errors: "all" })
const decodeEventBySchema = Schema.decodeUnknownEither(AnalyticsEvent, { errors: "all" })

const isText = (value: unknown, max: number): value is string =>
  typeof value === "string" && value.length >= 1 && value.length <= max
const isOptionalText = (value: unknown, max: number) => value === undefined || isText(value, max)
const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)
/** In the schema's order, which is the order of the stored JSON's keys. */
const UTM_KEYS = Object.keys(Utm.fields) as ReadonlyArray<keyof typeof Utm.fields>

/**
 * The accepting half of `AnalyticsEvent`'s decoder, written out: an event of the usual shape (epoch
 * milliseconds, plain-object utm and props) is checked field by field in well under a microsecond, where the
 * schema takes ≈ 2.5 µs. It builds the same value the schema would (only the known fields; utm's keys in the
 * schema's order). Anything it does not accept goes to the schema, which accepts it or says why not, so it
 * never decides a refusal; a property test checks that it never accepts what the schema refuses and that
 * both store the same row.
 */
export const acceptEventFast = (candidate: unknown): AnalyticsEvent | undefined => {
  if (!isPlainObject(candidate)) return undefined
  const { event_id, name, timestamp, visitor_id, session_id, url, referrer, utm, props } = candidate
  if (!isText(event_id, MAX.id) || !isText(name, MAX.name) || !isText(visitor_id, MAX.id)) return undefined
  if (typeof timestamp !== "number" || !Number.isSafeInteger(timestamp) || timestamp < 0) return undefined
  if (timestamp > LATEST_EVENT_MILLIS) return undefined
  if (!isOptionalText(session_id, MAX.id) || !isOptionalText(url, MAX.url) || !isOptionalText(referrer, MAX.url))
    return undefined
  let utmOut: Record<string, string> | undefined
  if (utm !== undefined) {
    if (!isPlainObject(utm)) return undefined
    utmOut = {}
    for (const key of UTM_KEYS) {
      const value = utm[key]
      if (!isOptionalText(value, MAX.utm)) return undefined
      if (value !== undefined) utmOut[key] = value as string
    }
  }
  // `__proto__` as an own key is copied differently by the schema: leave such a bag to it.
  if (props !== undefined && (!isPlainObject(props) || Object.hasOwn(props, "__proto__"))) return undefined
  return {
    event_id,
    name,
    timestamp,
    visitor_id,
    ...(session_id === undefined ? {} : { session_id: session_id as string }),
    ...(url === undefined ? {} : { url: url as string }),
    ...(referrer === undefined ? {} : { referrer: referrer as string }),
    ...(utmOut === undefined ? {} : { utm: utmOut }),
    ...(props === undefined ? {} : { props: { ...(props as Record<string, unknown>) } })
  }
}

/** An event as stored, or why it was refused: the fast path first, the schema for everything else. */
const decodeEvent = (candidate: unknown): Either.Either<AnalyticsEvent, ParseResult.ParseError> => {
  const fast = acceptEventFast(candidate)
  return fast === undefined ? decodeEventBySchema(candidate) : Either.right(fast)
}

/** JSON.stringify that never throws (cycles, BigInt): what cannot be stored is dropped, not fatal. */
const safeJson = (value: unknown) => {
  try {
    return JSON.stringify(value)
  } catch {
    return null
  }
}

/**
 * The multi-row insert of `rows` events; a retried event is skipped and not returned. The readout's derived columns
 * (`referrer_host`, `page`, `utm_source`) are values computed here, so the statement is plain SQL both engines read
 * alike, and PostgreSQL types every parameter from its column (SqlDirect numbers the placeholders there).
 */
const insertEvents = (rows: number) =>
  `INSERT INTO analytics_events (${EVENT_COLUMN_LIST}) VALUES ${placeholders(EVENT_COLUMNS.length, rows)}
  ON CONFLICT (site_id, event_id) DO NOTHING RETURNING event_id`

/** The first-touch rows of `rows` visitors; a visitor attributed before keeps its first attribution. */
const insertAttribution = (rows: number) =>
  `INSERT INTO analytics_attribution (${ATTRIBUTION_COLUMN_LIST})
  VALUES ${placeholders(ATTRIBUTION_COLUMNS.length, rows)} ON CONFLICT (site_id, visitor_id) DO NOTHING`

/** An event's values, in EVENT_COLUMNS order. */
const eventRow = (siteId: string, kind: CollectorKind, now: number, event: AnalyticsEvent): Array<SqlParam> => [
  siteId,
  event.event_id,
  kind,
  event.name,
  occurredAt(event),
  event.visitor_id,
  event.session_id ?? null,
  event.url ?? null,
  event.referrer ?? null,
  event.utm ? safeJson(event.utm) : null,
  event.props ? safeJson(event.props) : null,
  now,
  referrerHost(event.referrer),
  pagePath(event.url),
  utmSource(event.utm)
]

/** A visitor's first stored event as its attribution, in ATTRIBUTION_COLUMNS order. */
const attributionRow = (siteId: string, event: AnalyticsEvent): Array<SqlParam> => [
  siteId,
  event.visitor_id,
  event.event_id,
  occurredAt(event),
  event.url ?? null,
  event.referrer ?? null,
  event.utm?.source ?? null,
  event.utm?.medium ?? null,
  event.utm?.campaign ?? null,
  event.utm?.content ?? null,
  event.utm?.term ?? null
]

/**
 * The analytics collectors. Events are stored once per (site, event id), so a retried batch stores
 * nothing twice; a visitor's attribution (landing URL, referrer, UTM) is recorded once, in the same
 * transaction as that visitor's first stored event.
 */
export class Collector extends Effect.Service<Collector>()("product/Collector", {
  effect: Effect.gen(function* () {
    const groups = yield* GroupCommit
    const config = yield* ProductConfig

    /**
     * Two statements per batch, whatever its size: the events (duplicates skipped by the primary key,
     * the stored ones returned), then the first stored event of each visitor as attribution (skipped
     * for visitors already attributed). Both in one transaction.
     */
    const store = (
      kind: CollectorKind,
      siteId: string,
      events: ReadonlyArray<{ index: number; event: AnalyticsEvent }>
    ) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        groups.submit((db) =>
          Effect.gen(function* () {
            const inserted = yield* db.all<{ event_id: string }>(
              insertEvents(events.length),
              events.flatMap(({ event }) => eventRow(siteId, kind, now, event))
            )
            const stored = new Set(inserted.map((row) => row.event_id))
            const firstByVisitor = new Map<string, AnalyticsEvent>()
            for (const { event } of events) {
              if (stored.has(event.event_id) && !firstByVisitor.has(event.visitor_id)) {
                firstByVisitor.set(event.visitor_id, event)
              }
            }
            if (firstByVisitor.size > 0) {
              yield* db.run(
                insertAttribution(firstByVisitor.size),
                [...firstByVisitor.values()].flatMap((event) => attributionRow(siteId, event))
              )
            }
            // A duplicate within the batch itself is inserted once: everything not stored is a duplicate.
            return { accepted: stored.size, duplicates: events.length - stored.size }
          })
        )
      ).pipe(Effect.orDie)

    /** Takes the raw body (JSON sent as application/json or text/plain, as sendBeacon does). */
    const collect = hotSpan("Collector.collect")(function* (kind: CollectorKind, body: string) {
      let raw: unknown
      try {
        raw = JSON.parse(body)
      } catch {
        // The parser's message quotes part of the body (which may carry a secret): never pass it on.
        return yield* new MalformedBatch({ code: "INVALID_JSON", detail: "request body is not valid JSON" })
      }
      const batch = decodeBatch(raw)
      if (Either.isLeft(batch)) {
        // A 400's detail names the fields and what they must be, never the values sent.
        return yield* new MalformedBatch({
          code: "MALFORMED_BATCH",
          detail: formatIssues(batch.left, { limit: 3, withoutValues: true })
        })
      }
      const siteId = batch.right.site_id
      if (!config.collectSites.has(siteId)) {
        return yield* new SiteNotAllowed({ site_id: siteId, detail: `site ${siteId} is not allow-listed` })
      }
      const valid: Array<{ index: number; event: AnalyticsEvent }> = []
      const rejected: Array<{ index: number; reason: string }> = []
      batch.right.events.forEach((candidate, index) => {
        const event = decodeEvent(candidate)
        if (Either.isLeft(event)) rejected.push({ index, reason: describe(event.left) })
        else valid.push({ index, event: event.right })
      })
      const stored = valid.length === 0 ? { accepted: 0, duplicates: 0 } : yield* store(kind, siteId, valid)
      return new CollectResult({ ...stored, rejected })
    })

    return { collect } as const
  }),
  dependencies: [GroupCommit.Default]
}) {}
