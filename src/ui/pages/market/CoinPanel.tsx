import { useEffect, useState } from "preact/hooks"
import { api, type Refusal } from "../../lib/api.js"
import { LineChart } from "../../lib/LineChart.js"
import { Refused } from "../../lib/Refused.js"
import { percent } from "./decimal.js"

const PERIODS = ["24h", "7d", "30d"] as const
type Period = (typeof PERIODS)[number]

interface History {
  readonly current: { readonly price_str: string; readonly market_cap_str: string; readonly supply_str: string }
  readonly price_change_percent: number
  readonly history: ReadonlyArray<{ readonly price: number; readonly price_str: string; readonly timestamp: string }>
}

/**
 * The platform coin (`GET /api/coin/history`): its price (the operator's, sampled every minute), its change over
 * the period, supply and market cap, and the period's points evenly down-sampled to 200. Token prices are in coin.
 */
export const CoinPanel = () => {
  const [period, setPeriod] = useState<Period>("30d")
  const [answer, setAnswer] = useState<History | undefined>(undefined)
  const [refusal, setRefusal] = useState<Refusal | undefined>(undefined)
  useEffect(() => {
    let current = true
    api
      .market((client) => client.coin.history({ urlParams: { period, limit: 200 } }))
      .then((outcome) => {
        if (!current) return
        if (outcome.ok) {
          setAnswer(outcome.value)
          setRefusal(undefined)
        } else setRefusal(outcome.refusal)
      })
    return () => {
      current = false
    }
  }, [period])
  const points = answer?.history ?? []
  return (
    <section class="coin" aria-labelledby="coin-heading">
      <h2 id="coin-heading">Platform coin</h2>
      {refusal !== undefined && <Refused refusal={refusal} />}
      <dl class="figures">
        <div>
          <dt>Price</dt>
          <dd data-field="coin-price">{answer?.current.price_str ?? "…"}</dd>
        </div>
        <div>
          <dt>Change over {period}</dt>
          <dd data-field="coin-change">{answer === undefined ? "…" : percent(answer.price_change_percent)}</dd>
        </div>
        <div>
          <dt>Supply</dt>
          <dd data-field="coin-supply">{answer?.current.supply_str ?? "…"}</dd>
        </div>
        <div>
          <dt>Market cap</dt>
          <dd data-field="coin-market-cap">{answer?.current.market_cap_str ?? "…"}</dd>
        </div>
      </dl>
      <fieldset class="periods">
        <legend>Period</legend>
        {PERIODS.map((value) => (
          <label class="inline">
            <input
              type="radio"
              name="coin-period"
              value={value}
              checked={period === value}
              onChange={() => setPeriod(value)}
            />
            {value}
          </label>
        ))}
      </fieldset>
      <LineChart
        label="coin price"
        xs={points.map((point) => Date.parse(point.timestamp))}
        ys={points.map((point) => point.price)}
        last={points[points.length - 1]?.price_str}
        unit=""
      />
    </section>
  )
}
