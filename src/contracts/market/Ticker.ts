import { Schema } from "effect"

/**
 * The one ticker rule (docs/marketplace.md, "Tickers"): 2 to 10 letters or digits, starting with a letter, in
 * any case — a ticker is stored and answered upper case, and `sage` names `SAGE` wherever one is read (paths,
 * `agent:sage`, `ctl market agent create --ticker sage`). Paths, the trade fast path and launches all test this,
 * so a malformed ticker is refused with the same words whatever its length or where it was sent.
 */
export const TICKER = /^[A-Za-z][A-Za-z0-9]{1,9}$/

export const TICKER_RULE = "must be 2 to 10 letters or digits, starting with a letter (any case)"

export const isTicker = (text: string) => TICKER.test(text)

/** A ticker as a client sends it (a path parameter): any case; the answer to a malformed one names the rule. */
export const TickerText = Schema.String.pipe(Schema.pattern(TICKER, { message: () => TICKER_RULE }))
