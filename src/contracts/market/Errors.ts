import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

/** The typed errors of the marketplace; `code` is what clients switch on (docs/marketplace.md). */

export class AgentNotFound extends Schema.TaggedError<AgentNotFound>()(
  "AgentNotFound",
  { code: Schema.Literal("AGENT_NOT_FOUND"), ticker: Schema.String, detail: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}

export const agentNotFound = (ticker: string) =>
  new AgentNotFound({ code: "AGENT_NOT_FOUND", ticker, detail: `no agent or token with ticker ${ticker}` })

export class AgentNotTrading extends Schema.TaggedError<AgentNotTrading>()(
  "AgentNotTrading",
  {
    code: Schema.Literal("AGENT_NOT_TRADING"),
    ticker: Schema.String,
    /** The agent's status (`status` is the HTTP status in a problem body). */
    agent_status: Schema.String,
    detail: Schema.String
  },
  HttpApiSchema.annotations({ status: 409 })
) {}

export class AgentExists extends Schema.TaggedError<AgentExists>()(
  "AgentExists",
  { code: Schema.Literal("AGENT_EXISTS"), ticker: Schema.String, detail: Schema.String },
  HttpApiSchema.annotations({ status: 409 })
) {}

export class InvalidInput extends Schema.TaggedError<InvalidInput>()(
  "InvalidInput",
  { code: Schema.Literal("INVALID_INPUT"), detail: Schema.String },
  HttpApiSchema.annotations({ status: 400 })
) {}

export class InvalidTransition extends Schema.TaggedError<InvalidTransition>()(
  "InvalidTransition",
  {
    code: Schema.Literal("INVALID_TRANSITION"),
    ticker: Schema.String,
    from: Schema.String,
    to: Schema.String,
    detail: Schema.String
  },
  HttpApiSchema.annotations({ status: 409 })
) {}

export class AgentCannotChat extends Schema.TaggedError<AgentCannotChat>()(
  "AgentCannotChat",
  {
    code: Schema.Literal("AGENT_CANNOT_CHAT"),
    ticker: Schema.String,
    agent_status: Schema.String,
    detail: Schema.String
  },
  HttpApiSchema.annotations({ status: 403 })
) {}

export class SlippageExceeded extends Schema.TaggedError<SlippageExceeded>()(
  "SlippageExceeded",
  { code: Schema.Literal("SLIPPAGE_EXCEEDED"), detail: Schema.String },
  HttpApiSchema.annotations({ status: 409 })
) {}

export class TradeTooSmall extends Schema.TaggedError<TradeTooSmall>()(
  "TradeTooSmall",
  { code: Schema.Literal("TRADE_TOO_SMALL"), detail: Schema.String },
  HttpApiSchema.annotations({ status: 422 })
) {}

/** The curve has sold every token it had: nothing is left to buy (pump.fun: the curve is complete). */
export class CurveComplete extends Schema.TaggedError<CurveComplete>()(
  "CurveComplete",
  { code: Schema.Literal("CURVE_COMPLETE"), ticker: Schema.String, detail: Schema.String },
  HttpApiSchema.annotations({ status: 409 })
) {}

/** A fill-or-kill buy the curve could only fill in part: nothing was traded. */
export class OrderNotFilled extends Schema.TaggedError<OrderNotFilled>()(
  "OrderNotFilled",
  { code: Schema.Literal("ORDER_NOT_FILLED"), detail: Schema.String },
  HttpApiSchema.annotations({ status: 422 })
) {}

export class IdempotencyKeyReused extends Schema.TaggedError<IdempotencyKeyReused>()(
  "IdempotencyKeyReused",
  { code: Schema.Literal("IDEMPOTENCY_KEY_REUSED"), detail: Schema.String },
  HttpApiSchema.annotations({ status: 422 })
) {}

/** A wallet (or account) holds too little of the asset an order would take from it: nothing was done. */
export class InsufficientFunds extends Schema.TaggedError<InsufficientFunds>()(
  "InsufficientFunds",
  {
    code: Schema.Literal("INSUFFICIENT_FUNDS", "INSUFFICIENT_TOKENS"),
    account: Schema.String,
    asset: Schema.String,
    detail: Schema.String
  },
  HttpApiSchema.annotations({ status: 422 })
) {}

export class Unauthorized extends Schema.TaggedError<Unauthorized>()(
  "Unauthorized",
  { code: Schema.Literal("UNAUTHORIZED"), detail: Schema.String },
  HttpApiSchema.annotations({ status: 401 })
) {}

export class Forbidden extends Schema.TaggedError<Forbidden>()(
  "Forbidden",
  { code: Schema.Literal("WALLET_MISMATCH", "AGENT_KEY_REQUIRED", "WALLET_REQUIRED"), detail: Schema.String },
  HttpApiSchema.annotations({ status: 403 })
) {}

export class RateLimited extends Schema.TaggedError<RateLimited>()(
  "RateLimited",
  { code: Schema.Literal("RATE_LIMITED"), retry_after_seconds: Schema.Int, detail: Schema.String },
  HttpApiSchema.annotations({ status: 429 })
) {}

/**
 * The shared rate-limit counters (Redis) cannot be read and this endpoint class fails closed
 * (`KEEL_RATE_LIMIT_FAIL_CLOSED`): the request was not counted and nothing was done.
 */
export class RateLimitUnavailable extends Schema.TaggedError<RateLimitUnavailable>()(
  "RateLimitUnavailable",
  { code: Schema.Literal("RATE_LIMIT_UNAVAILABLE"), retry_after_seconds: Schema.Int, detail: Schema.String },
  HttpApiSchema.annotations({ status: 503 })
) {}

/**
 * The ticker's actor did not answer within `MARKET_TRADE_TIMEOUT` (in runners mode, typically while its runner's
 * shards move after a crash): the order may still be applied. `idempotency_key` is the order's id — the client's
 * Idempotency-Key, or the one Keel gave it — and the same order sent again with it answers its one outcome.
 */
export class TradeOutcomeUnknown extends Schema.TaggedError<TradeOutcomeUnknown>()(
  "TradeOutcomeUnknown",
  {
    code: Schema.Literal("TRADE_OUTCOME_UNKNOWN"),
    retry_after_seconds: Schema.Int,
    /** Null when the order had none (single mode, no Idempotency-Key sent): then only the balance tells. */
    idempotency_key: Schema.NullOr(Schema.String),
    detail: Schema.String
  },
  HttpApiSchema.annotations({ status: 503 })
) {}

/** A ticker's actor holds `MARKET_TRADE_QUEUE` trades already: this one was not taken (nothing changed). */
export class Overloaded extends Schema.TaggedError<Overloaded>()(
  "Overloaded",
  { code: Schema.Literal("OVERLOADED"), retry_after_seconds: Schema.Int, detail: Schema.String },
  HttpApiSchema.annotations({ status: 503 })
) {}

export class UnknownApiKey extends Schema.TaggedError<UnknownApiKey>()("UnknownApiKey", {
  code: Schema.Literal("API_KEY_NOT_FOUND"),
  detail: Schema.String
}) {}

/**
 * A message the agent's actor could not apply (its transaction failed: a defect, an I/O error): nothing of it
 * was done, and the cause is logged by the actor. Internal to the actor's protocol: a defect sent back as a
 * defect would make the cluster restart the actor and replay the message, forever when the failure repeats;
 * the HTTP layer answers it as a 500.
 */
export class ActorFailed extends Schema.TaggedError<ActorFailed>()("ActorFailed", {
  ticker: Schema.String,
  detail: Schema.String
}) {}
