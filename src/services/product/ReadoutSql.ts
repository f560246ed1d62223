/**
 * The SQL of the readout, as text with `?` placeholders: the Readout service runs it, and
 * bench/analytics-summary.mjs runs the very same text straight on better-sqlite3 as its baseline.
 */

/** The event name counted as a page view (what `keel/client` and most trackers send). */
export const PAGEVIEW = "pageview"

/**
 * `url`'s path without query or fragment (`https://keel.dev/pricing?x#y` → `/pricing`): what follows the first `://`
 * from its first `/` (`/` when there is none), or the whole of a url without `://`, cut at its first `?` or `#`;
 * `/` when nothing is left; null for no url. The collector stores it with each event (`page`).
 */
export const pagePath = (url: string | null | undefined): string | null => {
  if (url === null || url === undefined || url === "") return null
  const scheme = url.indexOf("://")
  let path = url
  if (scheme !== -1) {
    const slash = url.indexOf("/", scheme + 3)
    path = slash === -1 ? "" : url.slice(slash)
  }
  const query = path.indexOf("?")
  const fragment = path.indexOf("#")
  const end = query === -1 ? fragment : fragment === -1 ? query : Math.min(query, fragment)
  const page = end === -1 ? path : path.slice(0, end)
  return page === "" ? "/" : page
}

/** `utm.source` as the collector stores it with each event (`utm_source`): null when absent or empty. */
export const utmSource = (utm: { readonly source?: string | undefined } | undefined): string | null =>
  utm?.source === undefined || utm.source === "" ? null : utm.source

/**
 * `pagePath` in SQLite's SQL, a function of the column's name: migration 0005 backfilled the column with it (its
 * history: the collector now computes the value in TypeScript, which both engines store alike).
 */
export const pageExpression = (url: string) => {
  const rest = `substr(${url}, instr(${url}, '://') + 3)`
  const path = `(CASE WHEN instr(${url}, '://') > 0 THEN substr(${rest}, instr(${rest} || '/', '/')) ELSE ${url} END)`
  return `(CASE WHEN ${url} IS NULL OR ${url} = '' THEN NULL
  ELSE coalesce(nullif(substr(${path}, 1, instr(replace(${path}, '#', '?') || '?', '?') - 1), ''), '/') END)`
}

/**
 * `referrer`'s host as the readout groups by it: the WHATWG URL parser's host (what a browser would show:
 * credentials, port, path dropped; `https://a.com@b.com/` is `b.com`, `https://[::1]:8080/` is `[::1]`,
 * `https://d.com\\@e.com/` is `d.com`), lower-case, without a leading `www.`; a referrer without a scheme is
 * read as `http://…` (`news.ycombinator.com/x`); null when there is no host to read.
 */
export const referrerHost = (referrer: string | null | undefined): string | null => {
  if (referrer === null || referrer === undefined || referrer === "") return null
  const direct = URL.canParse(referrer) ? new URL(referrer) : undefined
  // `localhost:3000/x` parses as the scheme `localhost:` without a host: without `://` it is read as http.
  const parsed =
    direct?.hostname || referrer.includes("://") || !URL.canParse(`http://${referrer}`)
      ? direct
      : new URL(`http://${referrer}`)
  const host = parsed?.hostname.toLowerCase() ?? ""
  const bare = host.startsWith("www.") ? host.slice(4) : host
  return bare === "" ? null : bare
}

/**
 * The SQL reading of a referrer's host that migration 0005 backfilled with (kept for that migration's history;
 * it read credentials and IPv6 literals wrongly, and migration 0006 recomputes the column with `referrerHost`).
 */
export const referrerHostExpression = (referrer: string) => {
  const rest = `(CASE WHEN instr(${referrer}, '://') > 0 THEN substr(${referrer}, instr(${referrer}, '://') + 3) ELSE ${referrer} END)`
  const host = `lower(substr(${rest}, 1, instr(replace(replace(replace(${rest}, '?', '/'), '#', '/'), ':', '/') || '/', '/') - 1))`
  return `(CASE WHEN ${referrer} IS NULL OR ${referrer} = '' THEN NULL
  ELSE nullif(CASE WHEN ${host} LIKE 'www.%' THEN substr(${host}, 5) ELSE ${host} END, '') END)`
}

/** `utmSource` in SQLite's SQL, read from the stored UTM JSON: migration 0005's backfill (kept for its history). */
export const utmSourceExpression = (utm: string) =>
  `(CASE WHEN json_valid(${utm}) THEN nullif(json_extract(${utm}, '$.source'), '') END)`

const RANGE = "site_id = ? AND occurred_at >= ? AND occurred_at < ?"

/** 1 for a page view, else 0: summed, it counts them (PostgreSQL has no sum of a boolean, SQLite's is this). */
const IS_PAGEVIEW = `CASE WHEN name = '${PAGEVIEW}' THEN 1 ELSE 0 END`

/** The summary's statements; each reads one range of `analytics_events_summary` and nothing else. */
export const SUMMARY_SQL = {
  /** params: site, from, to */
  totals: `SELECT count(DISTINCT visitor_id) AS visitors, coalesce(sum(${IS_PAGEVIEW}), 0) AS pageviews,
    count(*) AS events FROM analytics_events WHERE ${RANGE}`,
  /** params: step, step, site, from, to */
  series: `SELECT (occurred_at / CAST(? AS BIGINT)) * CAST(? AS BIGINT) AS bucket, count(DISTINCT visitor_id) AS visitors,
    sum(${IS_PAGEVIEW}) AS pageviews, count(*) AS events
    FROM analytics_events WHERE ${RANGE} GROUP BY bucket ORDER BY bucket`,
  /** params: site, from, to, limit */
  pages: `SELECT page, count(*) AS pageviews, count(DISTINCT visitor_id) AS visitors
    FROM analytics_events WHERE ${RANGE} AND name = '${PAGEVIEW}' AND page IS NOT NULL
    GROUP BY page ORDER BY pageviews DESC, page LIMIT ?`,
  /** params: site, from, to, limit */
  referrers: `SELECT referrer_host AS referrer, count(DISTINCT visitor_id) AS visitors,
    sum(${IS_PAGEVIEW}) AS pageviews
    FROM analytics_events WHERE ${RANGE} AND referrer_host IS NOT NULL
    GROUP BY referrer_host ORDER BY visitors DESC, referrer LIMIT ?`,
  /** params: site, from, to, limit */
  utmSources: `SELECT utm_source, count(DISTINCT visitor_id) AS visitors, sum(${IS_PAGEVIEW}) AS pageviews
    FROM analytics_events WHERE ${RANGE} AND utm_source IS NOT NULL
    GROUP BY utm_source ORDER BY visitors DESC, utm_source LIMIT ?`
} as const

/**
 * Per variant: unique subjects first exposed in [from, to), their exposures, and how many of them have
 * an event named `metric` at or after their first exposure and before `to`.
 * params: metric, to, experiment id, from, to
 */
export const RESULTS_SQL = `SELECT x.variant AS variant, count(*) AS subjects, sum(x.exposures) AS exposures,
  sum(CASE WHEN EXISTS (SELECT 1 FROM analytics_events e WHERE e.name = ? AND e.visitor_id = x.subject
    AND e.occurred_at >= x.first_exposed_at AND e.occurred_at < ?) THEN 1 ELSE 0 END) AS conversions
  FROM experiment_exposures x
  WHERE x.experiment_id = ? AND x.first_exposed_at >= ? AND x.first_exposed_at < ?
  GROUP BY x.variant`

/** params: metric */
export const METRIC_EXISTS_SQL = "SELECT 1 AS found FROM analytics_events WHERE name = ? LIMIT 1"
