import { useEffect, useState } from "preact/hooks"
import { api, type Outcome } from "../../lib/api.js"
import { useCredential } from "../../lib/Credential.js"
import { count, interval, lift, percent, pIs, pValue } from "./format.js"
import { ReadoutRefused } from "./refusal.js"

/** One experiment's readout (`GET /api/experiments/:id/results`, docs/analytics.md "Readout"), as GrowthBook shows it. */

export interface Variant {
  readonly name: string
  readonly weight: number
  readonly is_control: boolean
  readonly exposures: number
  readonly subjects: number
  readonly conversions: number
  readonly conversion_rate: number | null
  readonly conversion_rate_ci: { readonly low: number; readonly high: number } | null
  readonly lift: number | null
  readonly p_value: number | null
  readonly probability_to_beat_control: number | null
}

interface Results {
  readonly experiment_id: string
  readonly metric: string
  readonly from: string
  readonly to: string
  readonly control: string
  readonly variants: ReadonlyArray<Variant>
  readonly srm: {
    readonly chi_square: number
    readonly df: number
    readonly p_value: number
    readonly mismatch: boolean
  } | null
  readonly unlisted_subjects: number
}

const query = () => new URLSearchParams(window.location.search)

/** The conversion rate's 95 % interval drawn as a whisker on a shared axis, the control's rate dashed. */
const IntervalBar = ({ variant, max, control }: { variant: Variant; max: number; control: number | null }) => {
  const width = 240
  const x = (value: number) => 4 + (value / max) * (width - 8)
  const ci = variant.conversion_rate_ci
  const rate = variant.conversion_rate
  const label =
    rate === null || ci === null
      ? "no subjects"
      : `conversion rate ${percent(rate)}, 95 % interval ${percent(ci.low)} to ${percent(ci.high)}`
  return (
    <svg class="ci" viewBox={`0 0 ${width} 20`} width={width} height={20} role="img" aria-label={label}>
      <line x1={4} x2={width - 4} y1={10} y2={10} class="ci-axis" />
      {control !== null && <line x1={x(control)} x2={x(control)} y1={1} y2={19} class="ci-control" />}
      {ci !== null && rate !== null && (
        <>
          <line
            x1={x(ci.low)}
            x2={x(ci.high)}
            y1={10}
            y2={10}
            class={`ci-range${variant.is_control ? " control" : ""}`}
          />
          <line x1={x(ci.low)} x2={x(ci.low)} y1={5} y2={15} class="ci-range" />
          <line x1={x(ci.high)} x2={x(ci.high)} y1={5} y2={15} class="ci-range" />
          <circle cx={x(rate)} cy={10} r={4} class="ci-point" />
        </>
      )}
    </svg>
  )
}

const SrmNotice = ({ srm }: { srm: Results["srm"] }) =>
  srm === null ? (
    <p class="muted srm-none">Sample ratio check: not computed (fewer than two weighted variants with subjects).</p>
  ) : srm.mismatch ? (
    <div class="warning srm-warning" role="alert">
      <strong>Sample ratio mismatch</strong> (χ² = {srm.chi_square.toFixed(2)}, df {srm.df}, {pIs(srm.p_value)}
      ): the subjects are split between the variants differently from the configured weights, more than chance explains
      (p &lt; 0.001). Something in the assignment or in the exposure logging is broken, so these results are not
      trustworthy until the cause is found and fixed.
    </div>
  ) : (
    <p class="muted srm-ok">
      Sample ratio check passed: the split matches the configured weights (χ² = {srm.chi_square.toFixed(2)},{" "}
      {pIs(srm.p_value)}).
    </p>
  )

export const ExperimentReadout = ({ id }: { id: string }) => {
  const token = useCredential("admin")
  const [metric, setMetric] = useState(query().get("metric") ?? "signup")
  const [draft, setDraft] = useState(metric)
  const [outcome, setOutcome] = useState<Outcome<Results> | undefined>(undefined)
  useEffect(() => {
    let live = true
    setOutcome(undefined)
    // No token in this tab yet: nothing to send (the API would answer 401); the field above asks for one.
    if (token === undefined) return
    void api
      .product((client) => client.experiments.results({ path: { id }, urlParams: { metric } }))
      .then((answer) => {
        if (live) setOutcome(answer)
      })
    return () => {
      live = false
    }
  }, [id, metric, token])
  const results = outcome?.ok === true ? outcome.value : undefined
  const control = results?.variants.find((variant) => variant.is_control)?.conversion_rate ?? null
  const max = Math.max(0.01, ...(results?.variants.map((variant) => variant.conversion_rate_ci?.high ?? 0) ?? [])) * 1.1
  return (
    <section class="readout">
      <p>
        <a href="/ui/experiments">All experiments</a>
      </p>
      <h1>
        Experiment <code>{id}</code>
      </h1>
      <form
        class="metric"
        onSubmit={(event) => {
          event.preventDefault()
          const next = draft.trim()
          if (next === "") return
          window.history.replaceState(
            null,
            "",
            `/ui/experiments/${encodeURIComponent(id)}?metric=${encodeURIComponent(next)}`
          )
          setMetric(next)
        }}
      >
        <label>
          Conversion metric (an analytics event name)
          <input name="metric" value={draft} onInput={(event) => setDraft((event.target as HTMLInputElement).value)} />
        </label>
        <button type="submit">Read</button>
      </form>
      {token === undefined ? (
        <p class="muted needs-token">Enter an admin token above to read this experiment.</p>
      ) : (
        outcome === undefined && <p class="muted">Reading…</p>
      )}
      {outcome?.ok === false && <ReadoutRefused refusal={outcome.refusal} />}
      {results !== undefined && (
        <>
          <p class="muted">
            Metric <strong>{results.metric}</strong>, subjects first exposed from {results.from} to {results.to}, and
            the control is <strong>{results.control}</strong>.
            {results.unlisted_subjects > 0 &&
              ` ${results.unlisted_subjects} subjects hold a variant the registry no longer lists (left out).`}
          </p>
          <SrmNotice srm={results.srm} />
          <div class="scroll">
            <table class="variants">
              <thead>
                <tr>
                  <th scope="col">Variant</th>
                  <th scope="col" class="num">
                    Weight
                  </th>
                  <th scope="col" class="num">
                    Subjects
                  </th>
                  <th scope="col" class="num">
                    Conversions
                  </th>
                  <th scope="col" class="num">
                    Conversion rate
                  </th>
                  <th scope="col">95 % interval</th>
                  <th scope="col" class="num">
                    Lift
                  </th>
                  <th scope="col" class="num">
                    p-value
                  </th>
                  <th scope="col" class="num">
                    P(beat control)
                  </th>
                </tr>
              </thead>
              <tbody>
                {results.variants.map((variant) => (
                  <tr data-variant={variant.name}>
                    <th scope="row">
                      {variant.name}
                      {variant.is_control && <span class="muted"> (control)</span>}
                    </th>
                    <td class="num" data-field="weight" data-label="Weight">
                      {percent(variant.weight)}
                    </td>
                    <td class="num" data-field="subjects" data-label="Subjects">
                      {count(variant.subjects)}
                    </td>
                    <td class="num" data-field="conversions" data-label="Conversions">
                      {count(variant.conversions)}
                    </td>
                    <td class="num" data-field="conversion_rate" data-label="Conversion rate">
                      {percent(variant.conversion_rate)}
                    </td>
                    <td data-field="conversion_rate_ci" data-label="95 % interval">
                      <IntervalBar variant={variant} max={max} control={control} />
                      <div class="muted small">{interval(variant.conversion_rate_ci)}</div>
                    </td>
                    <td
                      class={`num${variant.lift === null ? "" : variant.lift > 0 ? " good" : variant.lift < 0 ? " bad" : ""}`}
                      data-field="lift"
                      data-label="Lift"
                    >
                      {lift(variant.lift)}
                    </td>
                    <td class="num" data-field="p_value" data-label="p-value">
                      {pValue(variant.p_value)}
                    </td>
                    <td class="num" data-field="probability_to_beat_control" data-label="P(beat control)">
                      {percent(variant.probability_to_beat_control)}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <p class="muted small">
            Rate: conversions ÷ subjects, with its 95 % Wilson interval (the whisker; the dashed line is the control's
            rate). Lift vs control; p-value of a two-sided two-proportion z-test; probability to beat control under
            Beta(1, 1) priors (docs/analytics.md).
          </p>
        </>
      )}
    </section>
  )
}
