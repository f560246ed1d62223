/**
 * A small step chart in SVG (about 1 KB): a price that holds between trades, drawn as steps. Not uPlot: with the
 * typed clients the app's JavaScript is already near its 200 KB gzipped budget in one bundle, and uPlot is 22.5 KB
 * gzipped (docs/dashboard.md). The points' count and last value are on the figure (`data-points`, `data-last`).
 */
export interface LineChartProps {
  readonly label: string
  /** Times in ms, ascending. */
  readonly xs: ReadonlyArray<number>
  readonly ys: ReadonlyArray<number>
  /** The last value as exact text (shown and put on the figure). */
  readonly last: string | undefined
  readonly unit: string
}

const W = 600
const H = 220

const time = (ms: number) => (Number.isFinite(ms) ? new Date(ms).toISOString().replace("T", " ").slice(0, 19) : "—")

export const LineChart = ({ label, xs, ys, last, unit }: LineChartProps) => {
  const n = Math.min(xs.length, ys.length)
  const minY = Math.min(...ys.slice(0, n))
  const maxY = Math.max(...ys.slice(0, n))
  const x0 = xs[0] ?? 0
  const x1 = xs[n - 1] ?? 0
  // Trades in the same instant (the demo's) are spread evenly; otherwise the x axis is time.
  const px = (i: number) => (n <= 1 ? 0 : x1 > x0 ? ((xs[i]! - x0) / (x1 - x0)) * W : (i / (n - 1)) * W)
  const span = maxY - minY || Math.abs(maxY) || 1
  const py = (y: number) => H - 10 - ((y - minY) / span) * (H - 20)
  let d = ""
  for (let i = 0; i < n; i++) {
    const y = py(ys[i]!)
    d += i === 0 ? `M${px(0)},${y}` : `H${px(i)}V${y}`
  }
  if (n > 0) d += `H${W}`
  return (
    <figure class="chart" data-points={n} data-last={last ?? ""}>
      <svg
        viewBox={`0 0 ${W} ${H}`}
        preserveAspectRatio="none"
        role="img"
        aria-label={`${label}: ${n} point${n === 1 ? "" : "s"}${last === undefined ? "" : `, last ${last} ${unit}`}`}
      >
        <path d={d} fill="none" stroke="currentColor" stroke-width="2" vector-effect="non-scaling-stroke" />
      </svg>
      <figcaption>
        <span>
          high {n === 0 ? "—" : maxY.toPrecision(6)} · low {n === 0 ? "—" : minY.toPrecision(6)} {unit}
        </span>
        <span>
          {time(x0)} → {time(x1)}
        </span>
      </figcaption>
    </figure>
  )
}
