import { useEffect, useState } from "preact/hooks"
import { api, type Outcome } from "../../lib/api.js"
import { useCredential } from "../../lib/Credential.js"
import { count } from "./format.js"
import { ReadoutRefused } from "./refusal.js"

/** A site's analytics (`GET /api/analytics/summary`, docs/analytics.md "Site summary"), as Plausible shows it. */

interface Bucket {
  readonly start: string
  readonly visitors: number
  readonly pageviews: number
  readonly events: number
}

interface Summary {
  readonly site: string
  readonly from: string
  readonly to: string
  readonly interval: "day" | "hour"
  readonly totals: { readonly visitors: number; readonly pageviews: number; readonly events: number }
  readonly series: ReadonlyArray<Bucket>
  readonly top_pages: ReadonlyArray<{ readonly page: string; readonly pageviews: number; readonly visitors: number }>
  readonly top_referrers: ReadonlyArray<{
    readonly referrer: string
    readonly visitors: number
    readonly pageviews: number
  }>
  readonly top_utm_sources: ReadonlyArray<{
    readonly utm_source: string
    readonly visitors: number
    readonly pageviews: number
  }>
}

const day = (iso: string, interval: "day" | "hour") =>
  interval === "day" ? iso.slice(0, 10) : `${iso.slice(0, 13).replace("T", " ")}h`

/** Visitors and pageviews per bucket as two lines on one axis (inline SVG; no chart library for a few dozen points). */
const SeriesChart = ({ summary }: { summary: Summary }) => {
  const width = 600
  const height = 180
  const pad = { left: 4, right: 4, top: 8, bottom: 4 }
  const series = summary.series
  const top = Math.max(1, ...series.map((bucket) => Math.max(bucket.visitors, bucket.pageviews)))
  const x = (i: number) =>
    pad.left + (series.length <= 1 ? 0 : (i / (series.length - 1)) * (width - pad.left - pad.right))
  const y = (value: number) => pad.top + (1 - value / top) * (height - pad.top - pad.bottom)
  const line = (pick: (bucket: Bucket) => number) =>
    series.map((bucket, i) => `${x(i).toFixed(1)},${y(pick(bucket)).toFixed(1)}`).join(" ")
  const first = series[0]
  const last = series[series.length - 1]
  return (
    <figure class="series">
      <svg
        viewBox={`0 0 ${width} ${height}`}
        preserveAspectRatio="none"
        role="img"
        aria-label={`visitors and pageviews per ${summary.interval}, ${series.length} buckets, at most ${top}`}
      >
        <line x1={pad.left} x2={width - pad.right} y1={y(0)} y2={y(0)} class="axis" />
        <line x1={pad.left} x2={width - pad.right} y1={y(top)} y2={y(top)} class="grid-line" />
        <polyline points={line((bucket) => bucket.pageviews)} class="line pageviews" />
        <polyline points={line((bucket) => bucket.visitors)} class="line visitors" />
      </svg>
      <span class="ymax">{top}</span>
      <div class="ticks">
        <span>{first === undefined ? "" : day(first.start, summary.interval)}</span>
        <span>{last === undefined || series.length < 2 ? "" : day(last.start, summary.interval)}</span>
      </div>
      <figcaption>
        <span class="key visitors">visitors</span> <span class="key pageviews">pageviews</span> per {summary.interval}{" "}
        (UTC)
      </figcaption>
    </figure>
  )
}

const TopList = <R extends { readonly visitors: number; readonly pageviews: number }>({
  title,
  rows,
  label,
  heading,
  name
}: {
  title: string
  rows: ReadonlyArray<R>
  label: (row: R) => string
  heading: string
  name: string
}) => (
  <section class="top" aria-label={title}>
    <h2>{title}</h2>
    {rows.length === 0 ? (
      <p class="muted">None in this range.</p>
    ) : (
      <div class="scroll">
        <table data-list={name}>
          <thead>
            <tr>
              <th scope="col">{heading}</th>
              <th scope="col" class="num">
                Visitors
              </th>
              <th scope="col" class="num">
                Pageviews
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr>
                <td class="label">{label(row)}</td>
                <td class="num">{count(row.visitors)}</td>
                <td class="num">{count(row.pageviews)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    )}
  </section>
)

export const SiteAnalytics = ({ site }: { site: string }) => {
  const token = useCredential("admin")
  const [interval, setPer] = useState<"day" | "hour">(
    new URLSearchParams(window.location.search).get("interval") === "hour" ? "hour" : "day"
  )
  const [outcome, setOutcome] = useState<Outcome<Summary> | undefined>(undefined)
  useEffect(() => {
    let live = true
    setOutcome(undefined)
    // No token in this tab yet: nothing to send (the API would answer 401); the field above asks for one.
    if (token === undefined) return
    const urlParams =
      interval === "hour"
        ? { site, interval, from: `${new Date(Date.now() - 47 * 3_600_000).toISOString().slice(0, 13)}:00:00Z` }
        : { site, interval }
    void api
      .product((client) => client.analytics.summary({ urlParams }))
      .then((answer) => {
        if (live) setOutcome(answer)
      })
    return () => {
      live = false
    }
  }, [site, interval, token])
  const summary = outcome?.ok === true ? outcome.value : undefined
  return (
    <section class="analytics">
      <p>
        <a href="/ui/experiments">Experiments and sites</a>
      </p>
      <h1>
        Analytics of <code>{site}</code>
      </h1>
      <fieldset class="interval">
        <legend>Per</legend>
        {(["day", "hour"] as const).map((value) => (
          <label class="inline">
            <input
              type="radio"
              name="interval"
              value={value}
              checked={interval === value}
              onChange={() => {
                window.history.replaceState(
                  null,
                  "",
                  `/ui/experiments/analytics/${encodeURIComponent(site)}${value === "hour" ? "?interval=hour" : ""}`
                )
                setPer(value)
              }}
            />
            {value === "day" ? "day, last 30 days" : "hour, last 48 hours"}
          </label>
        ))}
      </fieldset>
      {token === undefined ? (
        <p class="muted needs-token">Enter an admin token above to read this site.</p>
      ) : (
        outcome === undefined && <p class="muted">Reading…</p>
      )}
      {outcome?.ok === false && <ReadoutRefused refusal={outcome.refusal} />}
      {summary !== undefined && (
        <>
          <p class="muted">
            From {summary.from} to {summary.to}.
          </p>
          <dl class="totals">
            <div>
              <dt>Unique visitors</dt>
              <dd data-total="visitors">{count(summary.totals.visitors)}</dd>
            </div>
            <div>
              <dt>Pageviews</dt>
              <dd data-total="pageviews">{count(summary.totals.pageviews)}</dd>
            </div>
            <div>
              <dt>Events</dt>
              <dd data-total="events">{count(summary.totals.events)}</dd>
            </div>
          </dl>
          <SeriesChart summary={summary} />
          <div class="tops">
            <TopList title="Top pages" name="pages" heading="Page" rows={summary.top_pages} label={(row) => row.page} />
            <TopList
              title="Top referrers"
              name="referrers"
              heading="Referrer"
              rows={summary.top_referrers}
              label={(row) => row.referrer}
            />
            <TopList
              title="UTM sources"
              name="utm"
              heading="Source"
              rows={summary.top_utm_sources}
              label={(row) => row.utm_source}
            />
          </div>
        </>
      )}
    </section>
  )
}
