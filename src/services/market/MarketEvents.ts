import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect, Option, Queue, Stream } from "effect"
import { NOTIFICATIONS_KEPT, Notifier } from "../platform/notify/Notifier.js"
import { pgNotifyAtCommit } from "../platform/notify/PgChannel.js"
import { Shutdown } from "../platform/Shutdown.js"
import { type Program, SqlDirect, type Statements } from "../platform/SqlDirect.js"

export type MarketEventKind = "trade" | "chat"

export interface MarketEvent {
  readonly seq: number
  readonly kind: MarketEventKind
  /** The event's JSON, exactly as it was committed. */
  readonly payload: string
}

const PAGE = 200
const KEEPALIVE = Duration.seconds(15)

const frame = (event: MarketEvent) => `id: ${event.seq}\nevent: ${event.kind}\ndata: ${event.payload}\n\n`

/** The notification channel of the outbox: "events were committed, read after your cursor". */
export const MARKET_EVENTS_CHANNEL = "market_events"

/**
 * The market events' commit lock on PostgreSQL, per schema: "KEEL" beside the migration lock's first key would be
 * ambiguous, so the first key is the outbox's own name hashed, the second the schema's (docs/database.md). The same
 * statement publishes the outbox's channel at commit (`pg_notify`, delivered when, and only if, the transaction
 * commits, once per transaction however many events it appends), so it costs no round trip of its own.
 */
const EVENTS_LOCK = `SELECT pg_advisory_xact_lock(hashtext('keel:market_events'), hashtext(current_schema())), ${pgNotifyAtCommit(MARKET_EVENTS_CHANNEL)}`

/**
 * Appends an event on `db`, inside its transaction (a statement program: docs/database.md). On PostgreSQL it first
 * takes the outbox's transaction lock, held to commit: the `seq` is drawn only after every earlier appender has
 * committed, so seq order is commit order and a reader's `seq > cursor` never passes an event still to commit.
 * Callers append last in their transaction, so the lock covers only their commit tails. SQLite has one writer.
 * On PostgreSQL the transaction also notifies every process's streams at its commit (EVENTS_LOCK).
 */
export function* appendEvent(db: Statements, kind: MarketEventKind, payload: unknown, now: number): Program<void> {
  if (db.dialect === "pg") yield* db.run(EVENTS_LOCK)
  yield* db.run("INSERT INTO market_events (kind, payload, created_at) VALUES (?, ?, ?)", [
    kind,
    JSON.stringify(payload),
    now
  ])
}

/**
 * The marketplace's event outbox: trades and chat messages are appended in the transaction that
 * commits them, so a stream resumed from an id (`Last-Event-ID`) misses nothing and sees nothing
 * that was rolled back. A wake-up after each commit (the `Notifier`'s outbox channel) lets open streams read at once
 * instead of polling: on PostgreSQL the streams of every process, woken by the appending transaction itself; on
 * SQLite this process's, woken by `committed`.
 */
export class MarketEvents extends Effect.Service<MarketEvents>()("market/MarketEvents", {
  scoped: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const direct = yield* SqlDirect
    const shutdown = yield* Shutdown
    const notifier = yield* Notifier

    /** Appends atomically (inside the caller's transaction when there is one); call `committed` once it has committed. */
    const append = (kind: MarketEventKind, payload: unknown) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        direct.transactionProgram(function* (db) {
          yield* appendEvent(db, kind, payload, now)
        })
      ).pipe(Effect.orDie)

    /**
     * Wakes the streams after an append committed. In-process: this process's streams, now. Across the database
     * (PostgreSQL): nothing to do, the appending transaction published at its commit, even if this process died since.
     */
    const committed = notifier.reach === "process" ? notifier.publish(MARKET_EVENTS_CHANNEL) : Effect.void

    const after = (seq: number, limit = PAGE) =>
      sql<MarketEvent>`SELECT seq, kind, payload FROM market_events WHERE seq > ${seq} ORDER BY seq LIMIT ${limit}`.pipe(
        Effect.map((rows) => rows.map((r) => ({ seq: Number(r.seq), kind: r.kind, payload: r.payload }))),
        Effect.orDie
      )

    const latest = sql<{ seq: number | null }>`SELECT max(seq) AS seq FROM market_events`.pipe(
      Effect.map((rows) => Number(rows[0]?.seq ?? 0)),
      Effect.orDie
    )

    /**
     * Server-Sent Events from after `lastEventId` (or from now), as text frames. A comment line every
     * 15 s keeps proxies from closing an idle stream, and reads the outbox again: what no wake-up announced (another
     * SQLite process's commit) shows within 15 s.
     */
    const sse = (lastEventId: Option.Option<number>) =>
      Stream.unwrapScoped(
        Effect.gen(function* () {
          // Subscribe before the first read, so a commit between the two is not missed. Every notification, a
          // message or a resync after a lost connection, means the same: read after the cursor again.
          const wake = (yield* notifier.subscribe(MARKET_EVENTS_CHANNEL)).notifications
          let cursor = Option.isSome(lastEventId) ? lastEventId.value : yield* latest
          const next = Effect.gen(function* () {
            const events = yield* after(cursor)
            if (events.length > 0) {
              cursor = events[events.length - 1]!.seq
              return events.map(frame).join("")
            }
            // Every wake-up waiting is taken at once: one read answers them all.
            const woke = yield* Queue.takeBetween(wake, 1, NOTIFICATIONS_KEPT).pipe(Effect.timeoutOption(KEEPALIVE))
            return Option.isSome(woke) ? "" : ": keepalive\n\n"
          })
          return Stream.make("retry: 3000\n\n").pipe(
            Stream.concat(Stream.repeatEffect(next).pipe(Stream.filter((text) => text.length > 0))),
            Stream.interruptWhen(shutdown.started)
          )
        })
      )

    return { append, committed, after, latest, sse } as const
  }),
  dependencies: [SqlDirect.Default]
}) {}
