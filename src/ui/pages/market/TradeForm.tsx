import { useState } from "preact/hooks"
import { api, type Refusal } from "../../lib/api.js"
import { CredentialField, useCredential } from "../../lib/Credential.js"
import { Refused } from "../../lib/Refused.js"
import { curveAfter, feeRateBps, quote } from "./quote.js"
import type { TradeEvent } from "./stream.js"

const WALLET_KEY = "keel.market.wallet"

type Receipt = Record<string, string | number | boolean>

/**
 * Buy or sell through the typed client (`tokens.buy` / `tokens.sell`) with the tab's API key and an
 * Idempotency-Key: the fee and the unit price are shown before sending (quote.ts says how they are known), then
 * the receipt or the refusal. A key whose outcome is unknown (no answer, 503) is kept for the retry of the same
 * request, so a retry never trades twice; any answer, or a changed request, takes a new one.
 */
export const TradeForm = ({ ticker, trades }: { ticker: string; trades: ReadonlyArray<TradeEvent> }) => {
  const apiKey = useCredential("apiKey")
  const [wallet, setWallet] = useState(sessionStorage.getItem(WALLET_KEY) ?? "")
  const [side, setSide] = useState<"buy" | "sell">("buy")
  const [amount, setAmount] = useState("")
  const [sending, setSending] = useState(false)
  const [retryKey, setRetryKey] = useState<{ key: string; request: string } | undefined>(undefined)
  const [answer, setAnswer] = useState<
    | { kind: "receipt"; side: "buy" | "sell"; receipt: Receipt; key: string }
    | { kind: "refused"; refusal: Refusal; key: string }
    | undefined
  >(undefined)
  const bps = feeRateBps(trades)
  const last = [...trades].reverse().find((trade) => trade.ticker === ticker)
  const shown = quote(side, amount, bps, curveAfter(last))
  const amountText = amount.trim()
  const request = JSON.stringify([side, ticker, wallet.trim(), amountText])

  const send = async () => {
    const key = retryKey?.request === request ? retryKey.key : crypto.randomUUID()
    setSending(true)
    const headers = { "idempotency-key": key }
    const outcome =
      side === "buy"
        ? await api.market(
            (client) =>
              client.tokens.buy({ path: { ticker }, payload: { user_id: wallet.trim(), amount: amountText }, headers }),
            "apiKey"
          )
        : await api.market(
            (client) =>
              client.tokens.sell({
                path: { ticker },
                payload: { user_id: wallet.trim(), amount: amountText },
                headers
              }),
            "apiKey"
          )
    setSending(false)
    if (outcome.ok) {
      setRetryKey(undefined)
      setAnswer({ kind: "receipt", side, receipt: outcome.value as unknown as Receipt, key })
    } else {
      // Unknown: no answer from the API (a network failure, not one of its codes) or TRADE_OUTCOME_UNKNOWN.
      const code = outcome.refusal.code
      const unknown = code === "TRADE_OUTCOME_UNKNOWN" || !/^[A-Z][A-Z_]+$/.test(code)
      setRetryKey(unknown ? { key, request } : undefined)
      setAnswer({ kind: "refused", refusal: outcome.refusal, key })
    }
  }

  return (
    <section aria-labelledby="trade-heading">
      <h2 id="trade-heading">Trade {ticker}</h2>
      <CredentialField kind="apiKey" why="a trade acts for your wallet, which the key must prove; reading needs none" />
      <form
        class="trade"
        aria-label={`trade ${ticker}`}
        onSubmit={(event) => {
          event.preventDefault()
          void send()
        }}
      >
        <label>
          Wallet address (user_id)
          <input
            name="wallet"
            value={wallet}
            placeholder="0x…"
            autocomplete="off"
            spellcheck={false}
            onInput={(event) => {
              const value = (event.target as HTMLInputElement).value
              setWallet(value)
              sessionStorage.setItem(WALLET_KEY, value.trim())
            }}
          />
        </label>
        <fieldset>
          <legend>Side</legend>
          {(["buy", "sell"] as const).map((value) => (
            <label class="inline">
              <input type="radio" name="side" value={value} checked={side === value} onChange={() => setSide(value)} />
              {value === "buy" ? "Buy" : "Sell"}
            </label>
          ))}
        </fieldset>
        <label>
          {side === "buy" ? "Coin to spend (fee included)" : `${ticker} tokens to sell`}
          <input
            name="amount"
            inputMode="decimal"
            autocomplete="off"
            value={amount}
            onInput={(event) => setAmount((event.target as HTMLInputElement).value)}
          />
        </label>
        <dl class="quote" aria-live="polite" aria-label="before sending">
          <dt>Fee</dt>
          <dd data-quote="fee">
            {shown?.fee === undefined ? "—" : `${shown.feeExact ? "" : "≈ "}${shown.fee} coin`}
            {bps !== undefined && <span class="muted"> ({(bps / 100).toFixed(2)} %)</span>}
          </dd>
          <dt>Unit price</dt>
          <dd data-quote="unit-price">
            {shown?.unitPrice === undefined ? "—" : `≈ ${shown.unitPrice} coin per ${ticker}`}
          </dd>
          <dt>{side === "buy" ? `${ticker} received` : "Coin received"}</dt>
          <dd data-quote="receive">{shown?.receive === undefined ? "—" : `≈ ${shown.receive}`}</dd>
        </dl>
        <p class="muted small">
          {bps === undefined || last === undefined
            ? `Not known yet: the API publishes no fee rate or curve, and they are read from the trades seen (none of ${ticker} yet).`
            : `From the trades seen: the fee rate that gives every fee exactly, and the curve as ${ticker}'s last trade left it; ${side === "buy" ? "the fee is exact, the rest an estimate (a buy larger than what is left on the curve fills in part)" : "estimates"}. No slippage guard is sent.`}
        </p>
        <button type="submit" disabled={sending || apiKey === undefined || shown === undefined || wallet.trim() === ""}>
          {sending ? "Sending…" : `${side === "buy" ? "Buy" : "Sell"} ${ticker}`}
        </button>
        {apiKey === undefined && <span class="muted"> Enter an API key above to trade.</span>}
      </form>
      {answer?.kind === "refused" && (
        <div>
          <Refused refusal={answer.refusal} />
          <p class="muted small">
            Idempotency-Key <code>{answer.key}</code>
            {retryKey !== undefined && " — the outcome is unknown: sending the same request again reuses this key."}
          </p>
        </div>
      )}
      {answer?.kind === "receipt" && (
        <div class="receipt" role="status" aria-label="receipt">
          <strong>{answer.side === "buy" ? "Bought" : "Sold"}</strong>
          <dl>
            {Object.entries(answer.receipt)
              .filter(([name]) => name.endsWith("_str") || name === "partial")
              .map(([name, value]) => (
                <>
                  <dt>{name.replace(/_str$/, "").replaceAll("_", " ")}</dt>
                  <dd data-receipt={name.replace(/_str$/, "")}>{String(value)}</dd>
                </>
              ))}
          </dl>
          <p class="muted small">
            Idempotency-Key <code>{answer.key}</code>
          </p>
        </div>
      )}
    </section>
  )
}
