import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import {
  AnalyticsSummary,
  ExperimentNotFound,
  ExperimentResults,
  ReadoutQueryInvalid,
  SampleRatioCheck,
  SummaryBucket,
  VariantResult
} from "../../contracts/product/Readout.js"
import { dialectOf } from "../platform/sql/SqlDialect.js"
import { LATEST_EVENT_MILLIS } from "./EventTime.js"
import { type App, JourneyRegistry } from "./JourneyRegistry.js"
import { METRIC_EXISTS_SQL, RESULTS_SQL, SUMMARY_SQL } from "./ReadoutSql.js"
import { chiSquareGoodnessOfFit, probabilityToBeat, twoProportionZTest, wilsonInterval } from "./Stats.js"

const DAY = 86_400_000
const STEPS = { day: DAY, hour: 3_600_000 } as const
/** More buckets than this in one summary is refused (e.g. hourly over more than ~7 months). */
export const MAX_BUCKETS = 5_000
export const SRM_THRESHOLD = 0.001
export const DEFAULT_TOP = 10
export const MAX_TOP = 100

export interface ResultsQuery {
  readonly experimentId: string
  readonly metric: string
  readonly from?: string | undefined
  readonly to?: string | undefined
}

export interface SummaryQuery {
  readonly site: string
  readonly from?: string | undefined
  readonly to?: string | undefined
  readonly interval?: string | undefined
  readonly limit?: number | undefined
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/

/**
 * An ISO 8601 date (UTC; as `to`, the end of that day) or a date-time with a zone, in epoch ms.
 * Anything else, including impossible days (2026-02-30), is INVALID_DATE.
 */
export const parseReadoutDate = (name: "from" | "to", text: string) =>
  Effect.gen(function* () {
    const date = DATE.exec(text)
    if (date) {
      const millis = Date.UTC(Number(date[1]), Number(date[2]) - 1, Number(date[3]))
      if (new Date(millis).toISOString().slice(0, 10) === text) return name === "to" ? millis + DAY : millis
    } else if (DATE_TIME.test(text)) {
      const millis = Date.parse(text)
      if (!Number.isNaN(millis)) return millis
    }
    return yield* new ReadoutQueryInvalid({
      code: "INVALID_DATE",
      detail: `${name} must be an ISO 8601 date (2026-01-31) or date-time with a zone (2026-01-31T12:00:00Z)`
    })
  })

/** [from, to) in epoch ms, with defaults, checked. */
const window = (query: { from?: string | undefined; to?: string | undefined }, defaultSpan: number | "all") =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    // No window reaches past the last instant an event may carry (an ISO year has four digits): `to=9999-12-31`
    // ends there rather than at a year-10000 instant the answer could not write back as a date.
    const latest = (millis: number) => Math.min(millis, LATEST_EVENT_MILLIS)
    const to = latest(query.to === undefined ? now : yield* parseReadoutDate("to", query.to))
    const from = latest(
      query.from === undefined
        ? defaultSpan === "all"
          ? 0
          : to - defaultSpan
        : yield* parseReadoutDate("from", query.from)
    )
    if (from > to) {
      return yield* new ReadoutQueryInvalid({
        code: "INVALID_RANGE",
        detail: `from (${new Date(from).toISOString()}) is after to (${new Date(to).toISOString()})`
      })
    }
    return { from, to }
  })

const iso = (millis: number) => new Date(millis).toISOString()

/** The experiment with this id in the current registry, with the variant that is control. */
const findExperiment = (apps: Iterable<App>, id: string) => {
  for (const app of apps) {
    for (const journey of app.journeys) if (journey.experiment?.id === id) return journey.experiment
  }
  return undefined
}

interface VariantCounts {
  readonly subjects: number
  readonly exposures: number
  readonly conversions: number
}

const ZERO: VariantCounts = { subjects: 0, exposures: 0, conversions: 0 }

/**
 * A count or a sum as a number: PostgreSQL's driver answers `count(*)` (int8) and the sum of a BIGINT (numeric) as
 * text, SQLite's as numbers.
 */
type Counted = number | bigint | string

const countsOf = (row: { subjects: Counted; exposures: Counted; conversions: Counted }): VariantCounts => ({
  subjects: Number(row.subjects),
  exposures: Number(row.exposures),
  conversions: Number(row.conversions)
})

const figures = (row: { visitors: Counted; pageviews: Counted; events: Counted }) => ({
  visitors: Number(row.visitors),
  pageviews: Number(row.pageviews),
  events: Number(row.events)
})

/** Every figure of one variant against control (docs/analytics.md, "Experiment results"). */
const variantResult = (
  variant: { readonly name: string; readonly weight: number },
  counts: VariantCounts,
  control: VariantCounts,
  isControl: boolean
) => {
  const rate = counts.subjects > 0 ? counts.conversions / counts.subjects : null
  const controlRate = control.subjects > 0 ? control.conversions / control.subjects : null
  const test = isControl
    ? null
    : twoProportionZTest(control.conversions, control.subjects, counts.conversions, counts.subjects)
  return new VariantResult({
    name: variant.name,
    weight: variant.weight,
    is_control: isControl,
    exposures: counts.exposures,
    subjects: counts.subjects,
    conversions: counts.conversions,
    conversion_rate: rate,
    conversion_rate_ci: wilsonInterval(counts.conversions, counts.subjects),
    lift:
      isControl || rate === null || controlRate === null || controlRate === 0
        ? null
        : (rate - controlRate) / controlRate,
    z: test?.z ?? null,
    p_value: test?.p_value ?? null,
    probability_to_beat_control:
      isControl || counts.subjects === 0 || control.subjects === 0
        ? null
        : probabilityToBeat(control.conversions, control.subjects, counts.conversions, counts.subjects)
  })
}

/**
 * The experiments & analytics readout: experiment results with their statistics, and a Plausible-like
 * site summary. Read-only; both `GET /api/...` (admin token) and `ctl product ...` call it.
 */
export class Readout extends Effect.Service<Readout>()("product/Readout", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const registry = yield* JourneyRegistry

    const dialect = dialectOf(sql)
    const all = <Row extends object>(text: string, params: ReadonlyArray<string | number>) =>
      sql.unsafe<Row>(dialect.text(text), params as Array<string | number>).pipe(Effect.orDie)

    const experimentResults = Effect.fn("Readout.experimentResults")(function* (query: ResultsQuery) {
      const current = yield* registry.current
      const experiment = findExperiment(current.apps.values(), query.experimentId)
      if (experiment === undefined) {
        return yield* new ExperimentNotFound({
          code: "EXPERIMENT_NOT_FOUND",
          experiment_id: query.experimentId,
          detail:
            current.digest === ""
              ? `no experiment ${query.experimentId}: no valid product registry is loaded (${current.file} is missing or refused; the log says why)`
              : `no experiment ${query.experimentId} in the product registry`
        })
      }
      const metric = query.metric.trim()
      if (metric.length === 0 || metric.length > 200) {
        return yield* new ReadoutQueryInvalid({
          code: "UNKNOWN_METRIC",
          detail: "metric must be an analytics event name (1 to 200 characters)"
        })
      }
      const { from, to } = yield* window(query, "all")
      if ((yield* all(METRIC_EXISTS_SQL, [metric])).length === 0) {
        return yield* new ReadoutQueryInvalid({
          code: "UNKNOWN_METRIC",
          detail: `no analytics event is named ${JSON.stringify(metric)}: a metric is the name of a collected event`
        })
      }
      const rows = yield* all<{ variant: string; subjects: Counted; exposures: Counted; conversions: Counted }>(
        RESULTS_SQL,
        [metric, to, experiment.id, from, to]
      )
      const counts = new Map(rows.map((row) => [row.variant, countsOf(row)]))
      const control = experiment.variants.find((v) => v.name === "control") ?? experiment.variants[0]
      const controlCounts = counts.get(control.name) ?? ZERO
      const variants = experiment.variants.map((variant) =>
        variantResult(variant, counts.get(variant.name) ?? ZERO, controlCounts, variant === control)
      )
      const listed = new Set(experiment.variants.map((v) => v.name))
      // Against the current weights, over the variants that still take traffic: a variant weighted 0 after a
      // weight change holds subjects of the old weights, which no expected count of the new ones describes.
      const weighted = variants.filter((v) => v.weight > 0)
      const srm = chiSquareGoodnessOfFit(
        weighted.map((v) => v.subjects),
        weighted.map((v) => v.weight)
      )
      return new ExperimentResults({
        experiment_id: experiment.id,
        metric,
        from: iso(from),
        to: iso(to),
        control: control.name,
        variants,
        srm: srm === null ? null : new SampleRatioCheck({ ...srm, mismatch: srm.p_value < SRM_THRESHOLD }),
        unlisted_subjects: rows.filter((r) => !listed.has(r.variant)).reduce((n, r) => n + Number(r.subjects), 0)
      })
    })

    const analyticsSummary = Effect.fn("Readout.analyticsSummary")(function* (query: SummaryQuery) {
      const interval = query.interval ?? "day"
      if (interval !== "day" && interval !== "hour") {
        return yield* new ReadoutQueryInvalid({ code: "INVALID_INTERVAL", detail: "interval must be day or hour" })
      }
      const limit = query.limit ?? DEFAULT_TOP
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_TOP) {
        return yield* new ReadoutQueryInvalid({ code: "INVALID_LIMIT", detail: `limit must be 1..${MAX_TOP}` })
      }
      const { from, to } = yield* window(query, 30 * DAY)
      const step = STEPS[interval]
      const first = Math.floor(from / step) * step
      const buckets = to > from ? Math.ceil((to - first) / step) : 0
      if (buckets > MAX_BUCKETS) {
        return yield* new ReadoutQueryInvalid({
          code: "INVALID_RANGE",
          detail: `${buckets} ${interval} buckets asked; at most ${MAX_BUCKETS} (use a shorter range${interval === "hour" ? " or interval=day" : ""})`
        })
      }
      const range = [query.site, from, to] as const
      const [totals, series, pages, referrers, utmSources] = [
        yield* all<{ visitors: Counted; pageviews: Counted; events: Counted }>(SUMMARY_SQL.totals, range),
        yield* all<{ bucket: Counted; visitors: Counted; pageviews: Counted; events: Counted }>(SUMMARY_SQL.series, [
          step,
          step,
          ...range
        ]),
        yield* all<{ page: string; pageviews: Counted; visitors: Counted }>(SUMMARY_SQL.pages, [...range, limit]),
        yield* all<{ referrer: string; visitors: Counted; pageviews: Counted }>(SUMMARY_SQL.referrers, [
          ...range,
          limit
        ]),
        yield* all<{ utm_source: string; visitors: Counted; pageviews: Counted }>(SUMMARY_SQL.utmSources, [
          ...range,
          limit
        ])
      ]
      const byBucket = new Map(series.map((row) => [Number(row.bucket), row]))
      return new AnalyticsSummary({
        site: query.site,
        from: iso(from),
        to: iso(to),
        interval,
        totals: totals[0] === undefined ? { visitors: 0, pageviews: 0, events: 0 } : figures(totals[0]),
        // Every bucket of the range, empty ones as zeros, so a chart needs no gap filling.
        series: Array.from({ length: buckets }, (_, i) => {
          const start = first + i * step
          const row = byBucket.get(start)
          return new SummaryBucket({
            start: iso(start),
            visitors: Number(row?.visitors ?? 0),
            pageviews: Number(row?.pageviews ?? 0),
            events: Number(row?.events ?? 0)
          })
        }),
        top_pages: pages.map((r) => ({ page: r.page, pageviews: Number(r.pageviews), visitors: Number(r.visitors) })),
        top_referrers: referrers.map((r) => ({
          referrer: r.referrer,
          visitors: Number(r.visitors),
          pageviews: Number(r.pageviews)
        })),
        top_utm_sources: utmSources.map((r) => ({
          utm_source: r.utm_source,
          visitors: Number(r.visitors),
          pageviews: Number(r.pageviews)
        }))
      })
    })

    return { experimentResults, analyticsSummary } as const
  })
}) {}
