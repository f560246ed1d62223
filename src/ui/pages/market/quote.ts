import { approx, ceilDiv, nanoText, toNano } from "./decimal.js"
import type { TradeEvent } from "./stream.js"

/**
 * A trade's quote before sending. The API has no quote endpoint and publishes neither the fee rate
 * (`MARKET_FEE_BPS`) nor a curve's reserves, but every trade event carries what both follow from
 * (docs/marketplace.md "Bonding curve"):
 * - the fee rate: a buy's `fee` is ceil(coin · bps / 10000), a sell's ceil(curve_coin · bps / 10000); the rate is
 *   the one that gives every fee seen exactly;
 * - the curve: a constant-product curve whose trade moved `c` coin and `t` tokens and left the marginal price `p`
 *   has, after it, virtual reserves vT = c·t / |p·t − c| and vC = p · vT.
 * The fee is then exact for a buy (integers, as the server rounds); the tokens, the unit price and a sell's fee
 * are estimates off the curve as the last trade left it (the server's roundings favour the pool by nano-units).
 */

/** The fee rate in basis points that gives every fee seen, or undefined when no trade has been seen. */
export const feeRateBps = (trades: ReadonlyArray<TradeEvent>): number | undefined => {
  const samples = trades
    .map((trade) => ({
      base: toNano(trade.side === "buy" ? trade.coin : trade.curveCoin),
      fee: toNano(trade.fee)
    }))
    .filter((s): s is { base: bigint; fee: bigint } => s.base !== undefined && s.fee !== undefined && s.base > 0n)
    .sort((a, b) => (a.base > b.base ? -1 : 1))
  const largest = samples[0]
  if (largest === undefined) return undefined
  const guess = Math.round((Number(largest.fee) / Number(largest.base)) * 10_000)
  for (const bps of [guess, guess - 1, guess + 1])
    if (bps >= 0 && samples.every((s) => ceilDiv(s.base * BigInt(bps), 10_000n) === s.fee)) return bps
  return undefined
}

/** The curve's virtual reserves after the ticker's last trade, or undefined when none has been seen. */
export const curveAfter = (trade: TradeEvent | undefined) => {
  if (trade === undefined) return undefined
  const c = Number(trade.curveCoin)
  const t = Number(trade.tokens)
  const p = Number(trade.price)
  const token = (c * t) / Math.abs(p * t - c)
  const coin = p * token
  return Number.isFinite(token) && token > 0 && coin > 0 ? { coin, token } : undefined
}

export interface Quote {
  /** Exact text (a buy's fee) or an estimate's; undefined when the fee rate is not known yet. */
  readonly fee: string | undefined
  readonly feeExact: boolean
  /** Coin per token the curve would apply (fee excluded), an estimate. */
  readonly unitPrice: string | undefined
  /** Tokens received (buy) or coin received after the fee (sell), an estimate. */
  readonly receive: string | undefined
}

export const quote = (
  side: "buy" | "sell",
  amountText: string,
  bps: number | undefined,
  curve: { coin: number; token: number } | undefined
): Quote | undefined => {
  const amount = toNano(amountText)
  if (amount === undefined || amount <= 0n) return undefined
  if (side === "buy") {
    const fee = bps === undefined ? undefined : ceilDiv(amount * BigInt(bps), 10_000n)
    const net = Number(amount - (fee ?? 0n)) / 1e9
    const tokens = curve === undefined ? undefined : (curve.token * net) / (curve.coin + net)
    return {
      fee: fee === undefined ? undefined : nanoText(fee),
      feeExact: true,
      unitPrice: tokens === undefined || fee === undefined ? undefined : approx(net / tokens),
      receive: tokens === undefined || fee === undefined ? undefined : approx(tokens)
    }
  }
  const tokens = Number(amount) / 1e9
  const payout = curve === undefined ? undefined : (curve.coin * tokens) / (curve.token + tokens)
  const fee = payout === undefined || bps === undefined ? undefined : Math.ceil(payout * bps * 1e5) / 1e9
  return {
    fee: fee === undefined ? undefined : approx(fee),
    feeExact: false,
    unitPrice: payout === undefined ? undefined : approx(payout / tokens),
    receive: payout === undefined || fee === undefined ? undefined : approx(payout - fee)
  }
}
