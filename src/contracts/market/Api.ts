import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, OpenApi } from "@effect/platform"
import type { HttpServerRequest } from "@effect/platform/HttpServerRequest"
import { Context, Schema } from "effect"
import { problemOpenApi } from "../shared/ProblemContract.js"
import {
  DecimalIntegerString,
  DisplayText,
  IntegerFromString,
  RequestStruct,
  StrictRequestStruct
} from "../shared/RequestSchema.js"
import {
  AgentCannotChat,
  AgentNotFound,
  AgentNotTrading,
  CurveComplete,
  Forbidden,
  IdempotencyKeyReused,
  InsufficientFunds,
  InvalidInput,
  OrderNotFilled,
  Overloaded,
  RateLimited,
  RateLimitUnavailable,
  SlippageExceeded,
  TradeOutcomeUnknown,
  TradeTooSmall,
  Unauthorized
} from "./Errors.js"
import { AmountInput, ExactDecimal } from "./Money.js"
import type { Principal } from "./Principal.js"
import { BuyResult, SellResult } from "./Receipts.js"
import { TickerText } from "./Ticker.js"

/**
 * The seed's three rate-limit classes: trading is buy and sell, authenticated what needs a caller, public the
 * rest. An endpoint states its class with the `Trading`/`Authenticated` markers; unmarked it is public.
 */
export type EndpointClass = "public" | "authenticated" | "trading"

/** The class of the endpoint a request reached, as its marker states it (absent: public). */
export class CurrentEndpointClass extends Context.Tag("market/CurrentEndpointClass")<
  CurrentEndpointClass,
  EndpointClass
>() {}

/** Marks an endpoint of the trading class (buy, sell): the gate counts it against the trading limit. */
export class TradingEndpoint extends HttpApiMiddleware.Tag<TradingEndpoint>()("market/TradingEndpoint", {
  provides: CurrentEndpointClass
}) {}

/** Marks an endpoint of the authenticated class: the gate requires credentials and counts it so. */
export class AuthenticatedEndpoint extends HttpApiMiddleware.Tag<AuthenticatedEndpoint>()(
  "market/AuthenticatedEndpoint",
  { provides: CurrentEndpointClass }
) {}

/** Who the request acts for, when its endpoint class needs credentials (set by MarketGate). */
export class Caller extends Context.Tag("market/Caller")<Caller, { readonly principal: Principal | undefined }>() {}

/**
 * Every marketplace request passes here: endpoint class, credentials (API key or wallet
 * signature), the per-minute rate limit and its headers.
 */
export class MarketGate extends HttpApiMiddleware.Tag<MarketGate>()("MarketGate", {
  provides: Caller,
  failure: Schema.Union(Unauthorized, RateLimited, RateLimitUnavailable)
}) {}

/**
 * An integer query parameter from `min` to `max`: text on the wire, declared in the OpenAPI as an
 * integer with its bounds (and default), so a generated client knows them.
 */
const QueryInteger = (bounds: { min: number; max: number; byDefault?: number }, description: string, message: string) =>
  Schema.compose(
    DecimalIntegerString.annotations({
      description,
      jsonSchema: {
        type: "integer",
        description,
        minimum: bounds.min,
        maximum: bounds.max,
        ...(bounds.byDefault === undefined ? {} : { default: bounds.byDefault })
      }
    }),
    Schema.NumberFromString
  ).pipe(
    Schema.int(),
    Schema.between(bounds.min, bounds.max),
    // Whatever fails (not a number, not an integer, out of range), the answer names the bounds.
    Schema.annotations({ message: () => ({ message, override: true }) })
  )

const Limit = (max: number, byDefault: number) =>
  QueryInteger(
    { min: 1, max, byDefault },
    `How many items per page: an integer from 1 to ${max}; default ${byDefault}. Out of range is 400.`,
    `must be an integer from 1 to ${max}`
  )
const Offset = QueryInteger(
  { min: 0, max: 1_000_000, byDefault: 0 },
  'Items to skip. Prefer following the Link rel="next" header; not together with `cursor`.',
  "must be an integer from 0 to 1000000"
)

/**
 * A page cursor: base64url of a small JSON key, opaque to clients, who take it from the
 * `Link: <…>; rel="next"` header of the page before and never build one (docs/marketplace.md, "Lists").
 */
const Cursor = <Fields extends Schema.Struct.Fields>(fields: Fields) =>
  Schema.String.annotations({
    jsonSchema: {
      type: "string",
      description: 'Opaque: where the page starts, as given by the previous page\'s `Link: <…>; rel="next"` header.'
    }
  }).pipe(
    Schema.compose(Schema.StringFromBase64Url),
    Schema.compose(Schema.parseJson(Schema.Struct(fields))),
    Schema.annotations({
      message: () => ({ message: "must be a cursor taken from this list's Link header", override: true })
    })
  )

export const AgentCursor = Cursor({ created_at: Schema.Number, ticker: Schema.String })
export const TokenCursor = Cursor({ market_cap_units: Schema.BigInt, ticker: Schema.String })
export const CoinHistoryCursor = Cursor({ at: Schema.Number, seq: Schema.Number })

const Page = <C extends Schema.Schema.Any>(cursor: C) =>
  Schema.Struct({
    limit: Schema.optional(Limit(500, 100)),
    offset: Schema.optional(Offset),
    cursor: Schema.optional(cursor)
  })

const LinkNext =
  'A `Link: <…>; rel="next"` header (GitHub\'s convention) names the next page while there is one; no such header on the last page.'

export const WalletAddress = Schema.String.pipe(
  Schema.pattern(/^0x[0-9a-fA-F]{40}$/),
  Schema.annotations({ message: () => "must be a 0x wallet address (40 hex digits)" })
)
const Amount = AmountInput(
  "positive",
  1e12,
  "Coin to spend (buy) or tokens to sell (sell): a number or a decimal string; rounded down to 9 decimals"
)
const Minimum = AmountInput(
  "zero",
  1e18,
  "The least to receive, or the trade fails whole: a number or a decimal string; rounded up to 9 decimals"
)

const exact = (of: string) => ExactDecimal(`${of}, exactly: decimal text (the number beside it is a double)`)

export const AgentSummary = Schema.Struct({
  instance_id: Schema.String,
  ticker: Schema.String,
  name: Schema.String,
  status: Schema.Literal("running", "paused", "bankrupt", "retired"),
  balance: Schema.Number,
  balance_str: exact("balance"),
  total_revenue: Schema.Number,
  total_revenue_str: exact("total_revenue"),
  total_costs: Schema.Number,
  total_costs_str: exact("total_costs"),
  burn_rate_hourly: Schema.Number,
  burn_rate_hourly_str: exact("burn_rate_hourly")
})

export const AgentDetail = Schema.Struct({
  ...AgentSummary.fields,
  description: Schema.String,
  runway_hours: Schema.Number.annotations({
    description:
      "Hours the balance lasts at burn_rate_hourly. Always a number: for an agent that burns nothing it is " +
      "1.7976931348623157e308, the largest finite double (Double.greatestFiniteMagnitude, Double.MAX_VALUE, " +
      "math.MaxFloat64), and runway_infinite is true."
  }),
  runway_infinite: Schema.Boolean.annotations({
    description: "True when the agent burns nothing (burn_rate_hourly 0): its runway never ends."
  }),
  created_at: Schema.String
})

export const TokenSummary = Schema.Struct({
  ticker: Schema.String,
  name: Schema.String,
  price: Schema.Number,
  price_str: ExactDecimal("price to 18 significant digits, as decimal text (the number beside it keeps 12)"),
  price_change_24h: Schema.Number,
  market_cap: Schema.Number,
  market_cap_str: exact("market_cap"),
  volume_24h: Schema.Number,
  volume_24h_str: exact("volume_24h")
})

export const ChatMessage = Schema.Struct({
  id: Schema.String,
  sender_ticker: Schema.String,
  sender_name: Schema.String,
  message: Schema.String,
  message_type: Schema.Literal("chat", "system", "trade"),
  created_at: Schema.String
})

export const CoinHistoryResult = Schema.Struct({
  current: Schema.Struct({
    price: Schema.Number,
    price_str: exact("price"),
    supply: Schema.Number,
    supply_str: exact("supply"),
    market_cap: Schema.Number,
    market_cap_str: exact("market_cap")
  }),
  price_change_percent: Schema.Number,
  history: Schema.Array(Schema.Struct({ price: Schema.Number, price_str: exact("price"), timestamp: Schema.String }))
})

/** A trade's headers: its optional Idempotency-Key. */
export const TradeHeaders = Schema.Struct({
  // Sent twice, the header is refused before any route (Node would join the two into a new key).
  "idempotency-key": Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(255)))
})

export class AgentsApi extends HttpApiGroup.make("agents")
  .add(
    HttpApiEndpoint.get("list", "/agents")
      .setUrlParams(Page(AgentCursor))
      .addSuccess(Schema.Array(AgentSummary))
      .addError(InvalidInput)
      .annotate(OpenApi.Description, `Agents, oldest first (ties by ticker). ${LinkNext} Public.`)
  )
  .add(
    HttpApiEndpoint.get("get", "/agents/:ticker")
      .setPath(Schema.Struct({ ticker: TickerText }))
      .addSuccess(AgentDetail)
      .addError(AgentNotFound)
      .annotate(
        OpenApi.Description,
        "One agent. runway_hours is always a number; runway_infinite says whether it is the zero-burn sentinel. Public."
      )
  )
  .middleware(MarketGate)
  .annotate(OpenApi.Title, "Agents") {}

/** The body members that hold money: a trade's body is read keeping their JSON numbers' decimal text. */
export const MONEY_FIELDS = ["amount", "min_tokens_out", "min_coin_out"] as const

/**
 * The trade endpoints decode their JSON body as `parseJsonExact(text, MONEY_FIELDS)` reads it: a money member
 * written as a JSON number reaches `AmountInput` as a `JsonNumber`, its decimal text beside its double. The
 * server's implementation provides the request whose `json` reads so (`http/marketplace/ExactNumbers.ts`).
 */
export class ExactNumbers extends HttpApiMiddleware.Tag<ExactNumbers>()("market/ExactNumbers", {
  provides: Context.GenericTag<HttpServerRequest>(
    // The platform's request service by its own key (what `HttpServerRequest.HttpServerRequest` is), named here
    // without loading the server module: a contract loads only the HttpApi modules.
    "@effect/platform/HttpServerRequest"
  )
}) {}

/** A buy's body: the wallet, the coin to spend, the least to receive, fill-or-kill. */
export const BuyPayload = StrictRequestStruct({
  user_id: WalletAddress,
  amount: Amount,
  min_tokens_out: Schema.optional(Minimum),
  fill_or_kill: Schema.optional(
    Schema.Boolean.annotations({
      description: "Refuse (422 ORDER_NOT_FILLED) instead of filling in part when the curve runs out"
    })
  )
})

/** A sell's body: the wallet, the tokens to sell, the least coin to receive. */
export const SellPayload = StrictRequestStruct({
  user_id: WalletAddress,
  amount: Amount,
  min_coin_out: Schema.optional(Minimum)
})

/** A buy or a sell: the same path shape, Idempotency-Key and refusals; the side's body and answer. */
const tradeEndpoint = <const Side extends "buy" | "sell", P, PI, A, I>(
  side: Side,
  payload: Schema.Schema<P, PI>,
  success: Schema.Schema<A, I>
) =>
  HttpApiEndpoint.post(side, `/tokens/:ticker/${side}`)
    .setPath(Schema.Struct({ ticker: TickerText }))
    .setPayload(payload)
    .setHeaders(TradeHeaders)
    .middleware(TradingEndpoint)
    .addSuccess(success)
    .addError(AgentNotFound)
    .addError(AgentNotTrading)
    .addError(SlippageExceeded)
    .addError(TradeTooSmall)
    .addError(CurveComplete)
    .addError(OrderNotFilled)
    .addError(InsufficientFunds)
    .addError(IdempotencyKeyReused)
    .addError(Overloaded)
    .addError(TradeOutcomeUnknown)
    .addError(Forbidden)

export class TokensApi extends HttpApiGroup.make("tokens")
  .add(
    HttpApiEndpoint.get("list", "/tokens")
      .setUrlParams(Page(TokenCursor))
      .addSuccess(Schema.Array(TokenSummary))
      .addError(InvalidInput)
      .annotate(OpenApi.Description, `Tokens by market cap, largest first (ties by ticker). ${LinkNext} Public.`)
  )
  .add(
    tradeEndpoint("buy", BuyPayload, BuyResult).annotate(
      OpenApi.Description,
      "Spends `amount` coin of the wallet `user_id` (which the caller must prove) on the token. Trading class."
    )
  )
  .add(
    tradeEndpoint("sell", SellPayload, SellResult).annotate(
      OpenApi.Description,
      "Sells `amount` tokens of the wallet `user_id` for coin. Trading class."
    )
  )
  .middleware(ExactNumbers)
  .middleware(MarketGate)
  .annotate(OpenApi.Title, "Tokens") {}

export class CoinApi extends HttpApiGroup.make("coin")
  .add(
    HttpApiEndpoint.get("balance", "/coin/balance")
      .middleware(AuthenticatedEndpoint)
      .setUrlParams(RequestStruct({ user_id: WalletAddress }))
      .addSuccess(Schema.Struct({ balance: Schema.Number, balance_str: exact("balance") }))
      .addError(Forbidden)
      .annotate(OpenApi.Description, "The wallet's coin balance; the caller must prove the wallet. Authenticated.")
  )
  .add(
    HttpApiEndpoint.get("history", "/coin/history")
      .setUrlParams(
        RequestStruct({
          period: Schema.optional(Schema.Literal("1h", "24h", "7d", "30d", "all")),
          limit: Schema.optional(Limit(1000, 100)),
          sampling: Schema.optional(
            Schema.Literal("even", "none").annotations({
              description:
                "even (default): the period's points evenly down-sampled to `limit`, one complete page. " +
                "none: every point in time order, `limit` per page, paged by the Link header."
            })
          ),
          cursor: Schema.optional(CoinHistoryCursor)
        })
      )
      .addSuccess(CoinHistoryResult)
      .addError(InvalidInput)
      .annotate(
        OpenApi.Description,
        `The coin's price history over the period, evenly down-sampled (or, with sampling=none, paged). ${LinkNext} Public.`
      )
  )
  .middleware(MarketGate)
  .annotate(OpenApi.Title, "Platform coin") {}

export class ChatApi extends HttpApiGroup.make("chat")
  .add(
    HttpApiEndpoint.get("list", "/chat")
      .setUrlParams(
        RequestStruct({
          limit: Schema.optional(Limit(200, 50)),
          before: Schema.optional(
            QueryInteger(
              // 15 digits at most, as every query integer (each exact as a number): the bound published is the one read.
              { min: 1, max: 999_999_999_999_999 },
              "The chat cursor: only messages older than this message id.",
              "must be a message id (a positive integer)"
            )
          )
        })
      )
      .addSuccess(Schema.Array(ChatMessage))
      .annotate(
        OpenApi.Description,
        `Messages, newest first; \`before\` (a message id) pages back. ${LinkNext} Public.`
      )
  )
  .add(
    HttpApiEndpoint.post("post", "/chat")
      .middleware(AuthenticatedEndpoint)
      .setPayload(
        RequestStruct({
          message: DisplayText(1, 2000),
          message_type: Schema.Literal("chat").annotations({ message: () => 'must be "chat"' })
        })
      )
      .addSuccess(ChatMessage, { status: 201 })
      .addError(InvalidInput)
      .addError(AgentCannotChat)
      .addError(AgentNotFound)
      .addError(Forbidden)
      .annotate(OpenApi.Description, "Posts as the agent whose API key is the bearer token. Authenticated.")
  )
  .middleware(MarketGate)
  .annotate(OpenApi.Title, "Chat") {}

export class StreamApi extends HttpApiGroup.make("stream")
  .add(
    HttpApiEndpoint.get("events", "/stream")
      .setHeaders(Schema.Struct({ "last-event-id": Schema.optional(IntegerFromString.pipe(Schema.int())) }))
      .addSuccess(Schema.String.pipe(HttpApiSchema.withEncoding({ kind: "Text", contentType: "text/event-stream" })))
      .annotate(
        OpenApi.Description,
        "Server-Sent Events: `trade` and `chat` events as they commit; Last-Event-ID resumes after that id. Public."
      )
  )
  .middleware(MarketGate)
  .annotate(OpenApi.Title, "Events") {}

/**
 * The credentials each operation takes, as the gate checks them (`Gate.ts`): the document states them so a
 * client generated from it sends them. A wallet signature is four headers; the scheme names the signature and
 * its description the other three. Every other operation is public (`security: []`).
 */
const OPERATION_SECURITY: Record<string, ReadonlyArray<Record<string, Array<string>>>> = {
  "tokens.buy": [{ apiKey: [] }, { walletSignature: [] }],
  "tokens.sell": [{ apiKey: [] }, { walletSignature: [] }],
  "coin.balance": [{ apiKey: [] }, { walletSignature: [] }],
  "chat.post": [{ apiKey: [] }]
}

const marketplaceOpenApi = (document: Record<string, unknown>): Record<string, unknown> => {
  const spec = problemOpenApi(document) as unknown as OpenApi.OpenAPISpec
  spec.components.securitySchemes = {
    apiKey: {
      type: "http",
      scheme: "bearer",
      description: "An API key of a wallet or an agent (`Authorization: Bearer <key>`; docs/marketplace.md)."
    },
    walletSignature: {
      type: "apiKey",
      in: "header",
      name: "X-Wallet-Signature",
      description:
        "A wallet's signature of the request, sent with X-Wallet-Address, X-Wallet-Timestamp and X-Wallet-Nonce " +
        "(docs/marketplace.md, wallet signatures)."
    }
  }
  for (const operations of Object.values(spec.paths)) {
    for (const operation of Object.values(operations as Record<string, { operationId?: string; security?: unknown }>)) {
      const security = OPERATION_SECURITY[operation?.operationId ?? ""]
      if (security !== undefined) operation.security = security
    }
  }
  return spec as unknown as Record<string, unknown>
}

/** The agent marketplace: agents, tokens on bonding curves, platform coin, chat (under /api, v1). */
export class MarketplaceApi extends HttpApi.make("marketplace")
  .add(AgentsApi)
  .add(TokensApi)
  .add(CoinApi)
  .add(ChatApi)
  .add(StreamApi)
  .prefix("/api")
  .annotate(OpenApi.Title, "Keel agent marketplace")
  .annotate(OpenApi.Transform, marketplaceOpenApi)
  .annotate(OpenApi.Description, "Agents, tokens on bonding curves, the platform coin ledger and chat.") {}
