import { Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { Schema } from "effect"
import { identity } from "effect/Function"
import {
  ActorFailed,
  AgentNotFound,
  AgentNotTrading,
  CurveComplete,
  IdempotencyKeyReused,
  InsufficientFunds,
  OrderNotFilled,
  SlippageExceeded,
  TradeTooSmall
} from "./Errors.js"
import { TradeReceipt } from "./Receipts.js"

/**
 * The protocol of a ticker's actor (`actors/MarketAgent.ts` implements it; `services/market/Trades.ts` sends
 * to it): the order a trade request becomes, what it answers, and the entity's messages. Runtime-free, so the
 * service that sends and the actor that applies both import it from below.
 */

export const TradeOrder = Schema.Struct({
  side: Schema.Literal("buy", "sell"),
  ticker: Schema.String,
  /** Lowercase 0x address. */
  wallet: Schema.String,
  /** Buy: coin to spend; sell: tokens to sell (nano-units). */
  amount: Schema.BigInt,
  /** min_tokens_out (buy) or min_coin_out (sell), nano-units; 0 for no guard. */
  minimum: Schema.BigInt,
  /** A buy the curve cannot fill entirely is refused instead of filled in part. */
  fillOrKill: Schema.optional(Schema.Boolean),
  idempotency: Schema.optional(
    Schema.Struct({ principal: Schema.String, key: Schema.String, fingerprint: Schema.String })
  )
})
export type TradeOrder = typeof TradeOrder.Type

export const TradeOutcome = Schema.Struct({ receipt: TradeReceipt, replayed: Schema.Boolean })
export type TradeOutcome = typeof TradeOutcome.Type

/**
 * `schema` as a transformation from itself, for an RPC payload. A struct schema has a `make`, and the RPC
 * client calls it on every message, which validates the whole payload again (≈ 2 % of a trade's CPU in the
 * market bench profile); the orders are built from the request's decoded fields, and what a remote runner
 * receives is still decoded by the schema.
 */
const withoutMake = <A, I>(schema: Schema.Schema<A, I>) =>
  Schema.transform(schema, Schema.typeSchema(schema), { strict: true, decode: identity, encode: identity })

/** Why one order was not applied: a refusal, or `ActorFailed` when its transaction failed. */
export const OrderRefusal = Schema.Union(
  AgentNotFound,
  AgentNotTrading,
  SlippageExceeded,
  TradeTooSmall,
  CurveComplete,
  OrderNotFilled,
  InsufficientFunds,
  IdempotencyKeyReused,
  ActorFailed
)

export const Trade = Rpc.make("Trade", { payload: withoutMake(TradeOrder), success: TradeOutcome, error: OrderRefusal })

/**
 * Several orders of one ticker in one message, answered with one result per order, in order: what the HTTP
 * side sends (`Trades`), so the trades that arrive together cross the actor hop once.
 */
export const TradeBatch = Rpc.make("TradeBatch", {
  payload: withoutMake(Schema.Struct({ orders: Schema.Array(TradeOrder) })),
  success: Schema.Array(Schema.Either({ right: TradeOutcome, left: OrderRefusal }))
})

export const Accrue = Rpc.make("Accrue", { success: Schema.BigInt, error: Schema.Union(AgentNotFound, ActorFailed) })

/**
 * One actor per agent, keyed by ticker: its trades and its cost accrual are handled one at a time,
 * while different tickers run side by side. All state is in SQL (Trading, Agents), so passivation
 * or a restart loses nothing; messages are volatile because an HTTP caller waits for the answer.
 */
export const MarketAgent = Entity.make("MarketAgent", [Trade, TradeBatch, Accrue])
