import { Effect, Option } from "effect"
import type { AnalyticsSummary, ExperimentResults } from "../../contracts/product/Readout.js"
import { Readout } from "../../services/product/Readout.js"
import type { Parsed } from "../Lazy.js"
import { emit, failWith, table } from "../Output.js"
import type { resultsConfig, summaryConfig } from "../product.js"

const pct = (x: number | null) => (x === null ? "-" : `${(x * 100).toFixed(2)}%`)

const num = (x: number | null, digits = 4) => (x === null ? "-" : x.toFixed(digits))

const renderResults = (r: ExperimentResults) =>
  [
    `${r.experiment_id}: metric ${r.metric}, ${r.from} .. ${r.to} (control: ${r.control})`,
    table(
      [
        "variant",
        "weight",
        "exposures",
        "subjects",
        "conversions",
        "rate",
        "95% CI",
        "lift",
        "p-value",
        "P(beat control)"
      ],
      r.variants.map((v) => [
        v.name,
        String(v.weight),
        String(v.exposures),
        String(v.subjects),
        String(v.conversions),
        pct(v.conversion_rate),
        v.conversion_rate_ci === null ? "-" : `${pct(v.conversion_rate_ci.low)}..${pct(v.conversion_rate_ci.high)}`,
        pct(v.lift),
        num(v.p_value),
        pct(v.probability_to_beat_control)
      ])
    ),
    r.srm === null
      ? "sample ratio: not enough data"
      : `sample ratio: chi-square ${num(r.srm.chi_square)} (df ${r.srm.df}), p ${num(r.srm.p_value, 6)}` +
        (r.srm.mismatch ? "  MISMATCH: check the assignment before trusting the results" : "  ok"),
    ...(r.unlisted_subjects > 0 ? [`${r.unlisted_subjects} subject(s) hold variants the registry no longer lists`] : [])
  ].join("\n")

const renderSummary = (s: AnalyticsSummary) =>
  [
    `${s.site}: ${s.from} .. ${s.to}, ${s.totals.visitors} visitors, ${s.totals.pageviews} pageviews, ${s.totals.events} events`,
    table(
      [s.interval, "visitors", "pageviews", "events"],
      s.series.map((b) => [b.start, String(b.visitors), String(b.pageviews), String(b.events)])
    ),
    "top pages",
    table(
      ["page", "pageviews", "visitors"],
      s.top_pages.map((p) => [p.page, String(p.pageviews), String(p.visitors)])
    ),
    "top referrers",
    table(
      ["referrer", "visitors", "pageviews"],
      s.top_referrers.map((p) => [p.referrer, String(p.visitors), String(p.pageviews)])
    ),
    "top UTM sources",
    table(
      ["utm_source", "visitors", "pageviews"],
      s.top_utm_sources.map((p) => [p.utm_source, String(p.visitors), String(p.pageviews)])
    )
  ].join("\n")

export const results = ({ experiment, from, json, metric, to }: Parsed<typeof resultsConfig>) =>
  Effect.gen(function* () {
    const readout = yield* Readout
    const report = yield* readout
      .experimentResults({
        experimentId: experiment,
        metric,
        from: Option.getOrUndefined(from),
        to: Option.getOrUndefined(to)
      })
      .pipe(Effect.catchTags({ ExperimentNotFound: failWith(json), ReadoutQueryInvalid: failWith(json) }))
    yield* emit(json, report, renderResults)
  })

export const summary = ({ from, interval, json, limit, site, to }: Parsed<typeof summaryConfig>) =>
  Effect.gen(function* () {
    const readout = yield* Readout
    const report = yield* readout
      .analyticsSummary({
        site,
        from: Option.getOrUndefined(from),
        to: Option.getOrUndefined(to),
        interval,
        limit
      })
      .pipe(Effect.catchTags({ ReadoutQueryInvalid: failWith(json) }))
    yield* emit(json, report, renderSummary)
  })
