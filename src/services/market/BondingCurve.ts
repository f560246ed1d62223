import { ceilDiv } from "./Units.js"

/**
 * A token's bonding curve: constant product over virtual reserves (pump.fun). All quantities in
 * nano-units. Every rounding favours the pool and the platform: the trader never gets the fraction.
 */
export interface CurveState {
  readonly virtualCoin: bigint
  readonly virtualToken: bigint
  /** Tokens the curve can still sell (the real reserve); a buy never takes more. */
  readonly realToken: bigint
}

export interface BuyQuote {
  /** The coin the trade takes from the buyer: `fee + net` (less than offered when the curve runs out). */
  readonly cost: bigint
  readonly fee: bigint
  readonly net: bigint
  readonly tokensOut: bigint
  /** The curve ran out: only what was left was bought, for less than offered. */
  readonly partial: boolean
  readonly next: CurveState
}

export interface SellQuote {
  readonly gross: bigint
  readonly fee: bigint
  readonly coinOut: bigint
  readonly next: CurveState
}

export const BPS = 10_000n

/** Spends `coinIn` (fee included); undefined when nothing would be bought. */
export const quoteBuy = (curve: CurveState, coinIn: bigint, feeBps: bigint): BuyQuote | undefined => {
  if (coinIn <= 0n) return undefined
  let fee = ceilDiv(coinIn * feeBps, BPS)
  let net = coinIn - fee
  if (net <= 0n) return undefined
  const k = curve.virtualCoin * curve.virtualToken
  let virtualCoin = curve.virtualCoin + net
  let virtualToken = ceilDiv(k, virtualCoin)
  let tokensOut = curve.virtualToken - virtualToken
  const partial = tokensOut > curve.realToken
  if (partial) {
    // Only what is left can be bought; the coin needed for it is what the trade costs.
    tokensOut = curve.realToken
    virtualToken = curve.virtualToken - tokensOut
    virtualCoin = ceilDiv(k, virtualToken)
    net = virtualCoin - curve.virtualCoin
    fee = ceilDiv(net * feeBps, BPS - feeBps)
  }
  if (tokensOut <= 0n) return undefined
  return {
    cost: fee + net,
    fee,
    net,
    tokensOut,
    partial,
    next: { virtualCoin, virtualToken, realToken: curve.realToken - tokensOut }
  }
}

/** Sells `tokensIn`; undefined when the payout would round to nothing. */
export const quoteSell = (curve: CurveState, tokensIn: bigint, feeBps: bigint): SellQuote | undefined => {
  if (tokensIn <= 0n) return undefined
  const k = curve.virtualCoin * curve.virtualToken
  const virtualToken = curve.virtualToken + tokensIn
  const virtualCoin = ceilDiv(k, virtualToken)
  const gross = curve.virtualCoin - virtualCoin
  const fee = ceilDiv(gross * feeBps, BPS)
  const coinOut = gross - fee
  if (coinOut <= 0n) return undefined
  return { gross, fee, coinOut, next: { virtualCoin, virtualToken, realToken: curve.realToken + tokensIn } }
}

/** The marginal price now, coin per token, as a float for display only. */
export const marginalPrice = (curve: CurveState) => Number(curve.virtualCoin) / Number(curve.virtualToken)
