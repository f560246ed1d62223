import { HttpApiBuilder, HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option, Schema, Stream } from "effect"
import { AgentCursor, Caller, CoinHistoryCursor, MarketplaceApi, TokenCursor } from "../../contracts/market/Api.js"
import type { BuyResult, SellResult } from "../../contracts/market/Receipts.js"
import { type Agent, Agents, runwayOf } from "../../services/market/Agents.js"
import { Chat } from "../../services/market/Chat.js"
import { CoinHistory } from "../../services/market/CoinPrice.js"
import { COIN, Ledger } from "../../services/market/Ledger.js"
import { MarketEvents } from "../../services/market/MarketEvents.js"
import { TokenBoard } from "../../services/market/TokenBoard.js"
import { walletAccount } from "../../services/market/TokenMarket.js"
import { provenWallet, type TradeRequest, Trades } from "../../services/market/Trades.js"
import { fromUnits, unitsText } from "../../services/market/Units.js"

const agentJson = (agent: Agent) => ({
  instance_id: agent.instanceId,
  ticker: agent.ticker,
  name: agent.name,
  status: agent.status,
  balance: fromUnits(agent.balance),
  balance_str: unitsText(agent.balance),
  total_revenue: fromUnits(agent.totalRevenue),
  total_revenue_str: unitsText(agent.totalRevenue),
  total_costs: fromUnits(agent.totalCosts),
  total_costs_str: unitsText(agent.totalCosts),
  burn_rate_hourly: fromUnits(agent.burnRateHourly),
  burn_rate_hourly_str: unitsText(agent.burnRateHourly)
})

/**
 * Names the next page in a `Link: <…>; rel="next"` header (GitHub's convention) when there is one:
 * the request's own path and query with the next page's cursor parameters (and no offset). The
 * target is relative to the origin the client called, so it holds behind any proxy.
 */
const linkNext = (next: Record<string, string> | undefined) =>
  next === undefined
    ? Effect.void
    : Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const url = new URL(request.originalUrl, "http://origin.invalid")
        url.searchParams.delete("offset")
        for (const [name, value] of Object.entries(next)) url.searchParams.set(name, value)
        const link = `<${url.pathname}${url.search}>; rel="next"`
        yield* HttpApp.appendPreResponseHandler((_request, response) =>
          Effect.succeed(HttpServerResponse.setHeader(response, "link", link))
        )
      })

/** Answers `body`, linking its next page (if any) by `cursor`, encoded with the list's cursor schema. */
const withNextPage = <B, K, I>(body: B, next: K | undefined, cursor: Schema.Schema<K, I>) =>
  Effect.as(linkNext(next === undefined ? undefined : { cursor: String(Schema.encodeSync(cursor)(next)) }), body)

export const AgentsLive = HttpApiBuilder.group(MarketplaceApi, "agents", (handlers) =>
  Effect.gen(function* () {
    const agents = yield* Agents
    return handlers
      .handle("list", ({ urlParams }) =>
        agents
          .page({ limit: urlParams.limit ?? 100, offset: urlParams.offset, after: urlParams.cursor })
          .pipe(Effect.flatMap((page) => withNextPage(page.items.map(agentJson), page.next, AgentCursor)))
      )
      .handle("get", ({ path }) =>
        agents.find(path.ticker.toUpperCase()).pipe(
          Effect.map((agent) => ({
            ...agentJson(agent),
            description: agent.description,
            ...runwayOf(agent),
            created_at: new Date(agent.createdAt).toISOString()
          }))
        )
      )
  })
)

export const TokensLive = HttpApiBuilder.group(MarketplaceApi, "tokens", (handlers) =>
  Effect.gen(function* () {
    const board = yield* TokenBoard
    const trades = yield* Trades

    // The amounts arrive with their decimal text: the contract's `ExactNumbers` reads the body for the decoder.
    const trade = (request: TradeRequest) =>
      Effect.gen(function* () {
        const { principal } = yield* Caller
        const outcome = yield* trades
          .place(principal, request)
          .pipe(
            Effect.tapError((error) =>
              error._tag === "Overloaded" || error._tag === "TradeOutcomeUnknown"
                ? HttpApp.appendPreResponseHandler((_request, response) =>
                    Effect.succeed(
                      HttpServerResponse.setHeader(response, "retry-after", String(error.retry_after_seconds))
                    )
                  )
                : Effect.void
            )
          )
        if (outcome.replayed) {
          yield* HttpApp.appendPreResponseHandler((_request, response) =>
            Effect.succeed(HttpServerResponse.setHeader(response, "idempotent-replayed", "true"))
          )
        }
        return outcome.receipt
      })

    return handlers
      .handle("list", ({ urlParams }) =>
        board
          .page({ limit: urlParams.limit ?? 100, offset: urlParams.offset, after: urlParams.cursor })
          .pipe(Effect.flatMap((page) => withNextPage(page.items, page.next, TokenCursor)))
      )
      .handle("buy", ({ headers, path, payload }) =>
        trade({
          side: "buy",
          ticker: path.ticker,
          userId: payload.user_id,
          amount: payload.amount,
          minimum: payload.min_tokens_out,
          fillOrKill: payload.fill_or_kill,
          idempotencyKey: headers["idempotency-key"]
        }).pipe(Effect.map((receipt) => receipt as typeof BuyResult.Type))
      )
      .handle("sell", ({ headers, path, payload }) =>
        trade({
          side: "sell",
          ticker: path.ticker,
          userId: payload.user_id,
          amount: payload.amount,
          minimum: payload.min_coin_out,
          idempotencyKey: headers["idempotency-key"]
        }).pipe(Effect.map((receipt) => receipt as typeof SellResult.Type))
      )
  })
)

export const CoinLive = HttpApiBuilder.group(MarketplaceApi, "coin", (handlers) =>
  Effect.gen(function* () {
    const ledger = yield* Ledger
    const history = yield* CoinHistory
    return handlers
      .handle("balance", ({ urlParams }) =>
        Effect.gen(function* () {
          const { wallet } = yield* provenWallet((yield* Caller).principal, urlParams.user_id)
          const balance = yield* ledger.balance(walletAccount(wallet), COIN)
          return { balance: fromUnits(balance), balance_str: unitsText(balance) }
        })
      )
      .handle("history", ({ urlParams }) =>
        history
          .page({
            period: urlParams.period ?? "24h",
            limit: urlParams.limit ?? 100,
            sampling: urlParams.sampling,
            after: urlParams.cursor
          })
          .pipe(Effect.flatMap(({ next, report }) => withNextPage(report, next, CoinHistoryCursor)))
      )
  })
)

export const ChatLive = HttpApiBuilder.group(MarketplaceApi, "chat", (handlers) =>
  Effect.gen(function* () {
    const chat = yield* Chat
    return handlers
      .handle("list", ({ urlParams }) =>
        chat
          .page({ limit: urlParams.limit ?? 50, before: urlParams.before })
          .pipe(
            Effect.flatMap((page) => Effect.as(linkNext(page.next && { before: String(page.next.before) }), page.items))
          )
      )
      .handle("post", ({ payload }) => Effect.flatMap(Caller, ({ principal }) => chat.post(principal, payload.message)))
  })
)

export const StreamLive = HttpApiBuilder.group(MarketplaceApi, "stream", (handlers) =>
  Effect.gen(function* () {
    const events = yield* MarketEvents
    return handlers.handle("events", ({ headers }) =>
      Effect.succeed(
        HttpServerResponse.stream(events.sse(Option.fromNullable(headers["last-event-id"])).pipe(Stream.encodeText), {
          contentType: "text/event-stream",
          headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
        })
      )
    )
  })
)
