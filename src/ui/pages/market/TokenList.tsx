import { useEffect, useState } from "preact/hooks"
import { api, type Refusal } from "../../lib/api.js"
import { Refused } from "../../lib/Refused.js"
import { CoinPanel } from "./CoinPanel.js"
import { percent } from "./decimal.js"

export interface Token {
  readonly ticker: string
  readonly name: string
  readonly price: number
  readonly price_str: string
  readonly price_change_24h: number
  readonly market_cap_str: string
  readonly volume_24h_str: string
}

const SIZES = [10, 25, 100] as const

/**
 * `GET /api/tokens`, by market cap, a page at a time: `limit` + 1 rows are asked for, so a next page is known to
 * exist without an empty last page (the typed client answers the array, not the `Link` header, so pages go by
 * `offset`, which the API still answers; docs/marketplace.md "Lists and pages").
 */
export const TokenList = () => {
  const [size, setSize] = useState<number>(25)
  const [offset, setOffset] = useState(0)
  const [rows, setRows] = useState<ReadonlyArray<Token> | undefined>(undefined)
  const [refusal, setRefusal] = useState<Refusal | undefined>(undefined)
  const [reloads, setReloads] = useState(0)
  useEffect(() => {
    let current = true
    api
      .market((client) => client.tokens.list({ urlParams: { limit: size + 1, offset } }))
      .then((outcome) => {
        if (!current) return
        if (outcome.ok) {
          setRows(outcome.value)
          setRefusal(undefined)
        } else setRefusal(outcome.refusal)
      })
    return () => {
      current = false
    }
  }, [size, offset, reloads])
  const shown = rows?.slice(0, size) ?? []
  const more = (rows?.length ?? 0) > size
  return (
    <section class="market">
      <h1>Market</h1>
      <p class="muted">
        Tokens by market cap (largest first), as <code>GET /api/tokens</code> answers them; prices in coin per token,
        exact. Reading needs no credential; trading needs an API key (on a token's page).
      </p>
      {refusal !== undefined && <Refused refusal={refusal} />}
      <div class="scroll">
        <table class="tokens" aria-label="tokens">
          <thead>
            <tr>
              <th scope="col">#</th>
              <th scope="col">Token</th>
              <th scope="col" class="num">
                Price
              </th>
              <th scope="col" class="num">
                24 h
              </th>
              <th scope="col" class="num">
                Market cap
              </th>
              <th scope="col" class="num">
                Volume 24 h
              </th>
            </tr>
          </thead>
          <tbody>
            {shown.map((token, i) => (
              <tr key={token.ticker} data-ticker={token.ticker}>
                <td class="muted rank">{offset + i + 1}</td>
                <td class="name">
                  <a href={`/ui/market/${token.ticker}`}>
                    <strong>{token.ticker}</strong>
                  </a>{" "}
                  <span class="muted">{token.name}</span>
                </td>
                <td class="num" data-field="price" data-label="Price (coin)">
                  {token.price_str}
                </td>
                <td
                  class={`num ${token.price_change_24h > 0 ? "good" : token.price_change_24h < 0 ? "bad" : ""}`}
                  data-field="change"
                  data-label="24 h"
                >
                  {percent(token.price_change_24h)}
                </td>
                <td class="num" data-field="market-cap" data-label="Market cap">
                  {token.market_cap_str}
                </td>
                <td class="num" data-field="volume" data-label="Volume 24 h">
                  {token.volume_24h_str}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {rows === undefined && refusal === undefined && <p aria-live="polite">Loading…</p>}
      {rows !== undefined && shown.length === 0 && <p>No tokens on this page.</p>}
      <nav class="pager" aria-label="token pages">
        <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - size))}>
          Previous
        </button>
        <span>{shown.length === 0 ? "—" : `${offset + 1}–${offset + shown.length}`}</span>
        <button type="button" disabled={!more} onClick={() => setOffset(offset + size)}>
          Next
        </button>
        <label class="inline">
          Per page
          <select
            value={size}
            onChange={(event) => {
              setSize(Number((event.target as HTMLSelectElement).value))
              setOffset(0)
            }}
          >
            {SIZES.map((n) => (
              <option value={n}>{n}</option>
            ))}
          </select>
        </label>
        <button type="button" onClick={() => setReloads(reloads + 1)}>
          Refresh
        </button>
      </nav>
      <CoinPanel />
    </section>
  )
}
