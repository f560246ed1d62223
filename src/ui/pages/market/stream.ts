import { useEffect, useState } from "preact/hooks"

/**
 * The market's events (docs/marketplace.md "Events: GET /api/stream"). Live: an `EventSource` on `/api/stream`,
 * which the browser reconnects by itself with `Last-Event-ID`. History: the same stream read once from the start
 * of the outbox (`Last-Event-ID: 0`, which an EventSource cannot send on its first request, so a `fetch`), read
 * until it has caught up and then closed. The API has no per-token trade list or token price history; the trade
 * events (each with the marginal `price` after it) are that history. Both paths meet in one set, by event id.
 */

export interface TradeEvent {
  readonly id: number
  readonly ticker: string
  readonly side: "buy" | "sell"
  readonly wallet: string
  /** The wallet's coin movement: paid, fee included (buy); received, fee deducted (sell). */
  readonly coin: string
  /** The curve's side of the trade: coin in (buy, fee excluded) or out (sell, before the fee). */
  readonly curveCoin: string
  readonly tokens: string
  readonly fee: string
  readonly pricePerToken: string
  /** The token's marginal price after the trade. */
  readonly price: string
  readonly partial: boolean
  readonly at: number
}

export interface ChatEvent {
  readonly id: string
  readonly sender_ticker: string
  readonly sender_name: string
  readonly message: string
  readonly message_type: "chat" | "system" | "trade"
  readonly created_at: string
}

export interface MarketEvents {
  readonly trades: ReadonlyArray<TradeEvent>
  readonly chats: ReadonlyArray<ChatEvent>
  /** The EventSource is open (false while the browser reconnects). */
  readonly live: boolean
  /** The history (the outbox from its start) has been read. */
  readonly caughtUp: boolean
}

/** An amount's exact text (`coin_str`), or its number's for an event committed before the `_str` twins existed. */
const text = (data: Record<string, unknown>, field: string) => {
  const exact = data[`${field}_str`]
  return typeof exact === "string" ? exact : String(data[field] ?? "")
}

const tradeOf = (id: number, data: Record<string, unknown>): TradeEvent => ({
  id,
  ticker: String(data.ticker ?? ""),
  side: data.side === "sell" ? "sell" : "buy",
  wallet: String(data.wallet ?? ""),
  coin: text(data, "coin"),
  curveCoin: text(data, "curve_coin"),
  tokens: text(data, "tokens"),
  fee: text(data, "fee"),
  pricePerToken: text(data, "price_per_token"),
  price: text(data, "price"),
  partial: data.partial === true,
  at: Date.parse(String(data.created_at ?? ""))
})

/**
 * Reads `/api/stream` from the outbox's start and closes it once it reaches an event the live stream already
 * delivered (`reached`), or when nothing more comes for `idleMs` (no live event yet: the history is all read).
 */
const replay = async (
  signal: AbortSignal,
  idleMs: number,
  onEvent: (id: number, kind: string, data: string) => void,
  reached: (id: number) => boolean
) => {
  const response = await fetch("/api/stream", { headers: { "Last-Event-ID": "0" }, signal })
  const reader = response.body?.getReader()
  if (reader === undefined) return
  const decoder = new TextDecoder()
  let buffer = ""
  for (;;) {
    let timer: ReturnType<typeof setTimeout> | undefined
    const idle = new Promise<"idle">((resolve) => {
      timer = setTimeout(() => resolve("idle"), idleMs)
    })
    const chunk = await Promise.race([reader.read(), idle])
    clearTimeout(timer)
    if (chunk === "idle" || chunk.done) break
    buffer += decoder.decode(chunk.value, { stream: true })
    const frames = buffer.split("\n\n")
    buffer = frames.pop() ?? ""
    for (const frame of frames) {
      let id = Number.NaN
      let kind = "message"
      const data: Array<string> = []
      for (const line of frame.split("\n")) {
        if (line.startsWith("id:")) id = Number(line.slice(3).trim())
        else if (line.startsWith("event:")) kind = line.slice(6).trim()
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""))
      }
      if (Number.isFinite(id) && data.length > 0) {
        const met = reached(id)
        onEvent(id, kind, data.join("\n"))
        if (met) {
          await reader.cancel().catch(() => undefined)
          return
        }
      }
    }
  }
  await reader.cancel().catch(() => undefined)
}

/** Every trade and chat event, history then live, in commit order; re-rendered at most once a frame. */
export const useMarketEvents = (): MarketEvents => {
  const [state, setState] = useState<MarketEvents>({ trades: [], chats: [], live: false, caughtUp: false })
  useEffect(() => {
    const seen = new Set<number>()
    const trades: Array<TradeEvent> = []
    const chats: Array<ChatEvent & { seq: number }> = []
    let live = false
    let caughtUp = false
    let pending = false
    const flush = () => {
      pending = false
      trades.sort((a, b) => a.id - b.id)
      chats.sort((a, b) => b.seq - a.seq)
      setState({ trades: [...trades], chats: [...chats], live, caughtUp })
    }
    const schedule = () => {
      if (pending) return
      pending = true
      setTimeout(flush, 16)
    }
    const onEvent = (id: number, kind: string, data: string) => {
      if (seen.has(id)) return
      seen.add(id)
      try {
        const parsed = JSON.parse(data) as Record<string, unknown>
        if (kind === "trade") trades.push(tradeOf(id, parsed))
        else if (kind === "chat") chats.push({ ...(parsed as unknown as ChatEvent), seq: id })
      } catch {
        return
      }
      schedule()
    }
    const source = new EventSource("/api/stream")
    let firstLive: number | undefined
    const listen = (kind: string) => (event: MessageEvent<string>) => {
      const id = Number(event.lastEventId)
      firstLive ??= id
      onEvent(id, kind, event.data)
    }
    source.addEventListener("trade", listen("trade"))
    source.addEventListener("chat", listen("chat"))
    const history = new AbortController()
    let started = false
    source.onopen = () => {
      live = true
      schedule()
      if (started) return
      // The live stream is open (it reads from the outbox's end): read the history up to it, then close that read.
      started = true
      replay(history.signal, 1500, onEvent, (id) => firstLive !== undefined && id >= firstLive)
        .catch(() => undefined)
        .finally(() => {
          caughtUp = true
          schedule()
        })
    }
    source.onerror = () => {
      live = false
      schedule()
    }
    return () => {
      source.close()
      history.abort()
    }
  }, [])
  return state
}
