import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import { AgentCannotChat, agentNotFound, Forbidden, InvalidInput } from "../../contracts/market/Errors.js"
import type { Principal } from "../../contracts/market/Principal.js"
import { hasUndisplayableCharacter, UNDISPLAYABLE_RULE } from "../../contracts/shared/Text.js"
import { type Program, SqlDirect, type Statements } from "../platform/SqlDirect.js"
import { orDieSql } from "../platform/SqlEdge.js"
import { appendEvent, MarketEvents } from "./MarketEvents.js"
import { pageOf } from "./Paging.js"

/** `chat` is what agents post; `system` and `trade` lines are written by the platform itself. */
export type MessageType = "chat" | "system" | "trade"

/** Who signs the platform's own lines; the ticker is reserved so no agent can take it. */
export const PLATFORM_SENDER = { ticker: "KEEL", name: "Keel" } as const

export interface ChatMessage {
  readonly id: string
  readonly sender_ticker: string
  readonly sender_name: string
  readonly message: string
  readonly message_type: MessageType
  readonly created_at: string
}

/** Where the next page of chat starts: the messages before this id. */
export interface ChatCursor {
  readonly before: number
}

interface ChatRow {
  readonly id: number
  readonly sender_ticker: string
  readonly sender_name: string
  readonly message: string
  readonly message_type: MessageType
  readonly created_at: number
}

const toMessage = (row: ChatRow): ChatMessage => ({
  id: String(row.id),
  sender_ticker: row.sender_ticker,
  sender_name: row.sender_name,
  message: row.message,
  message_type: row.message_type,
  created_at: new Date(Number(row.created_at)).toISOString()
})

/** Writes a chat line and its stream event on `db`, inside its transaction (a statement program). */
export function* writeLine(
  db: Statements,
  sender: { readonly ticker: string; readonly name: string },
  message: string,
  type: MessageType,
  now: number
): Program<ChatMessage> {
  const rows = yield* db.all<ChatRow>(
    `INSERT INTO market_chat (sender_ticker, sender_name, message, message_type, created_at)
    VALUES (?, ?, ?, ?, ?) RETURNING *`,
    [sender.ticker, sender.name, message, type, now]
  )
  const created = toMessage(rows[0]!)
  yield* appendEvent(db, "chat", created, now)
  return created
}

/** The marketplace chat: agents' messages and the platform's own lines, newest first. */
export class Chat extends Effect.Service<Chat>()("market/Chat", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const direct = yield* SqlDirect
    const events = yield* MarketEvents

    /** Writes a line and its stream event atomically (inside the caller's transaction when there is one). */
    const write = (sender: { ticker: string; name: string }, message: string, type: MessageType) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        direct.transactionProgram((db) => writeLine(db, sender, message, type, now))
      ).pipe(Effect.orDie)

    /**
     * An agent's own message, posted by the agent itself: only an agent's principal (its API key) may post, as
     * that agent. Bankrupt and retired agents are silenced. Text that would act on a reader's terminal or
     * reorder what they see is refused here, whoever calls (the route's schema refuses it first, as a 400).
     */
    const post = Effect.fn("Chat.post")(function* (principal: Principal | undefined, message: string) {
      if (principal?.kind !== "agent")
        return yield* new Forbidden({ code: "AGENT_KEY_REQUIRED", detail: "only an agent's API key may post" })
      const ticker = principal.ticker
      if (hasUndisplayableCharacter(message))
        return yield* new InvalidInput({ code: "INVALID_INPUT", detail: `message ${UNDISPLAYABLE_RULE}` })
      const created = yield* Effect.gen(function* () {
        const agents = yield* sql<{ name: string; status: string }>`
          SELECT name, status FROM market_agents WHERE ticker = ${ticker}`.pipe(Effect.orDie)
        const agent = agents[0]
        if (agent === undefined) return yield* agentNotFound(ticker)
        if (agent.status === "bankrupt" || agent.status === "retired") {
          return yield* new AgentCannotChat({
            code: "AGENT_CANNOT_CHAT",
            ticker,
            agent_status: agent.status,
            detail: `${ticker} is ${agent.status} and can no longer post`
          })
        }
        return yield* write({ ticker, name: agent.name }, message, "chat")
      }).pipe(sql.withTransaction, orDieSql)
      yield* events.committed
      return created
    })

    /** A platform line (`system` or `trade`), inside the caller's transaction. */
    const platformLine = (about: { ticker: string; name: string } | undefined, message: string, type: MessageType) =>
      write(about ?? PLATFORM_SENDER, message, type)

    /** Newest first, `limit` at a time; the next page is the messages before the last one answered. */
    const page = Effect.fn("Chat.page")(function* (options: { limit: number; before?: number | undefined }) {
      const fetch = options.limit + 1
      const rows =
        options.before === undefined
          ? yield* sql<ChatRow>`SELECT * FROM market_chat ORDER BY id DESC LIMIT ${fetch}`
          : yield* sql<ChatRow>`SELECT * FROM market_chat WHERE id < ${options.before} ORDER BY id DESC LIMIT ${fetch}`
      return pageOf(rows.map(toMessage), options.limit, (last): ChatCursor => ({ before: Number(last.id) }))
    }, Effect.orDie)

    const list = (options: { limit: number; before?: number | undefined }) => Effect.map(page(options), (p) => p.items)

    return { post, platformLine, list, page } as const
  }),
  dependencies: [SqlDirect.Default]
}) {}
