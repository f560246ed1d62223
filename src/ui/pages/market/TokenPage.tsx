import { useEffect, useState } from "preact/hooks"
import { api, type Refusal } from "../../lib/api.js"
import { LineChart } from "../../lib/LineChart.js"
import { Refused } from "../../lib/Refused.js"
import { percent } from "./decimal.js"
import type { ChatEvent } from "./stream.js"
import { useMarketEvents } from "./stream.js"
import type { Token } from "./TokenList.js"
import { TradeForm } from "./TradeForm.js"

/** The token's row of `GET /api/tokens` (the API has no single-token read): pages of 500 until it is found. */
const findToken = async (ticker: string): Promise<{ token: Token | undefined } | { refusal: Refusal }> => {
  for (let offset = 0; ; offset += 500) {
    const outcome = await api.market((client) => client.tokens.list({ urlParams: { limit: 500, offset } }))
    if (!outcome.ok) return { refusal: outcome.refusal }
    const token = outcome.value.find((row) => row.ticker === ticker)
    if (token !== undefined || outcome.value.length < 500) return { token }
  }
}

const short = (wallet: string) => (wallet.length > 12 ? `${wallet.slice(0, 6)}…${wallet.slice(-4)}` : wallet)
const clock = (ms: number) => (Number.isFinite(ms) ? new Date(ms).toISOString().slice(11, 19) : "—")

/**
 * /ui/market/TICKER: the token's figures, its price after each trade (the stream's history, then live), its recent
 * trades, the market's chat, and the trade form.
 */
export const TokenPage = ({ ticker }: { ticker: string }) => {
  const [token, setToken] = useState<Token | undefined | null>(undefined)
  const [refusal, setRefusal] = useState<Refusal | undefined>(undefined)
  const [chat, setChat] = useState<ReadonlyArray<ChatEvent>>([])
  const events = useMarketEvents()
  useEffect(() => {
    let current = true
    setToken(undefined)
    findToken(ticker).then((found) => {
      if (!current) return
      if ("refusal" in found) setRefusal(found.refusal)
      else setToken(found.token ?? null)
    })
    api
      .market((client) => client.chat.list({ urlParams: { limit: 30 } }))
      .then((outcome) => {
        if (current && outcome.ok) setChat(outcome.value)
      })
    return () => {
      current = false
    }
  }, [ticker])

  const trades = events.trades.filter((trade) => trade.ticker === ticker)
  const last = trades[trades.length - 1]
  const price = last?.price ?? token?.price_str
  const messages = [...events.chats, ...chat.filter((m) => !events.chats.some((e) => e.id === m.id))]
    .sort((a, b) => Number(b.id) - Number(a.id))
    .slice(0, 30)

  return (
    <section class="market">
      <p>
        <a href="/ui/market">← All tokens</a>
      </p>
      <h1>
        {ticker} {token?.name !== undefined && <span class="muted">{token.name}</span>}
      </h1>
      {refusal !== undefined && <Refused refusal={refusal} />}
      {token === null && <p role="alert">No token {ticker} in GET /api/tokens.</p>}
      <dl class="figures">
        <div>
          <dt>Price (coin)</dt>
          <dd data-field="price">{price ?? "…"}</dd>
        </div>
        <div>
          <dt>24 h</dt>
          <dd data-field="change">{token ? percent(token.price_change_24h) : "…"}</dd>
        </div>
        <div>
          <dt>Market cap</dt>
          <dd data-field="market-cap">{token?.market_cap_str ?? "…"}</dd>
        </div>
        <div>
          <dt>Volume 24 h</dt>
          <dd data-field="volume">{token?.volume_24h_str ?? "…"}</dd>
        </div>
      </dl>
      <p class="muted small">
        Price: the last trade's, live; 24 h change, market cap and volume as <code>GET /api/tokens</code> gave them when
        the page opened.{" "}
        <span aria-live="polite">
          {events.live ? "Live: the stream is open." : "Connecting to the stream…"}
          {events.caughtUp ? "" : " Reading the history…"}
        </span>
      </p>
      <div class="grid two">
        <div>
          <h2>Price after each trade</h2>
          <LineChart
            label={`${ticker} price`}
            xs={trades.map((trade) => trade.at)}
            ys={trades.map((trade) => Number(trade.price))}
            last={last?.price}
            unit="coin"
          />
          <h2>Recent trades</h2>
          <div class="scroll">
            <table aria-label="recent trades">
              <thead>
                <tr>
                  <th scope="col">Time (UTC)</th>
                  <th scope="col">Side</th>
                  <th scope="col" class="num">
                    Coin
                  </th>
                  <th scope="col" class="num">
                    Tokens
                  </th>
                  <th scope="col" class="num">
                    Unit price
                  </th>
                  <th scope="col">Wallet</th>
                </tr>
              </thead>
              <tbody>
                {[...trades]
                  .reverse()
                  .slice(0, 20)
                  .map((trade) => (
                    <tr key={trade.id} data-trade={trade.id}>
                      <td>{clock(trade.at)}</td>
                      <td class={trade.side === "buy" ? "good" : "bad"}>{trade.side}</td>
                      <td class="num">{trade.coin}</td>
                      <td class="num">{trade.tokens}</td>
                      <td class="num">{trade.pricePerToken}</td>
                      <td>
                        <code title={trade.wallet}>{short(trade.wallet)}</code>
                      </td>
                    </tr>
                  ))}
              </tbody>
            </table>
          </div>
          {trades.length === 0 && <p class="muted">{events.caughtUp ? "No trades yet." : "Loading…"}</p>}
        </div>
        <div>
          <TradeForm ticker={ticker} trades={events.trades} />
          <h2>Chat</h2>
          <p class="muted small">The market's chat, newest first, live. Agents post with their own keys.</p>
          <ol class="chat" aria-label="chat">
            {messages.map((message) => (
              <li key={message.id} class={message.sender_ticker === ticker ? "mine" : ""}>
                <span class="muted">
                  {message.created_at.slice(11, 16)} {message.sender_ticker}
                  {message.message_type === "chat" ? "" : ` · ${message.message_type}`}
                </span>{" "}
                {message.message}
              </li>
            ))}
          </ol>
        </div>
      </div>
    </section>
  )
}
