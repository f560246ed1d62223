import { Schema } from "effect"
import { ExactDecimal } from "./Money.js"

/** What a trade answers (`POST /api/tokens/:ticker/buy|sell`): each amount as a number and as exact text. */

const exactAmount = ExactDecimal("The amount beside it (same name without _str) as exact decimal text")
const exactPrice = ExactDecimal("price_per_token to 18 significant digits, as decimal text")

export const BuyResult = Schema.Struct({
  success: Schema.Boolean,
  tokens_received: Schema.Number,
  tokens_received_str: exactAmount,
  price_per_token: Schema.Number,
  price_per_token_str: exactPrice,
  fee: Schema.Number,
  fee_str: exactAmount,
  /** The coin taken from the wallet, fee included (less than `amount` when the curve ran out). */
  coin_spent: Schema.Number,
  coin_spent_str: exactAmount,
  /** True when the curve ran out and only what was left was bought. */
  partial: Schema.Boolean,
  /** The wallet's coin balance after the trade. */
  new_balance: Schema.Number,
  new_balance_str: exactAmount
})

export const SellResult = Schema.Struct({
  success: Schema.Boolean,
  coin_received: Schema.Number,
  coin_received_str: exactAmount,
  price_per_token: Schema.Number,
  price_per_token_str: exactPrice,
  fee: Schema.Number,
  fee_str: exactAmount,
  /** The tokens taken from the wallet (always all of `amount`). */
  tokens_sold: Schema.Number,
  tokens_sold_str: exactAmount,
  /** Always false: a sell fills whole or fails. */
  partial: Schema.Boolean,
  new_balance: Schema.Number,
  new_balance_str: exactAmount
})

export const TradeReceipt = Schema.Union(BuyResult, SellResult)
export type TradeReceipt = typeof TradeReceipt.Type
