import { randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import {
  Chunk,
  Context,
  Deferred,
  Effect,
  Layer,
  Option,
  Queue,
  Redacted,
  type Scope,
  Stream,
  TestContext
} from "effect"
import pg from "pg"
import { marketMigrations } from "../../src/services/market/migrations.js"
import {
  API_KEYS_CHANNEL,
  ApiKeys,
  type DatabaseUnavailable,
  Ledger,
  MARKET_EVENTS_CHANNEL,
  MarketEvents,
  MarketServices,
  makePgNotifier,
  message,
  migrationsLayer,
  Notifier,
  postgres,
  resync,
  type SqlDialect,
  TokenMarket,
  Trading,
  toUnits,
  walletAccount
} from "../support/keel.js"
import {
  freshSchema,
  freshSchemaNamed,
  postgresSkipReason,
  testDatabaseUrl,
  urlInSchema
} from "../support/pg-schema.js"
import { type TcpProxy, tcpProxy } from "../support/tcp-proxy.js"

// Two "processes" on one PostgreSQL schema: two layer graphs, each with its pool and its notifier (its own LISTEN
// connection), as two `ctl serve` runners would have (docs/database.md, "Notifications between processes"). What one
// writes, the other's streams and key cache must hear. A process's listener can be put behind a proxy, to take its
// network away and give it back. cross-process-serve-pg.test.ts does the same with a real server process.
const W1 = "0x00000000000000000000000000000000000000d1"
const server = new URL(testDatabaseUrl)
const databaseServer = { host: server.hostname, port: Number(server.port || 5432) }

const urlOf = (schema: string, name: string, port?: number) => {
  const url = new URL(urlInSchema(testDatabaseUrl, schema))
  url.searchParams.set("application_name", name)
  if (port !== undefined) url.host = `127.0.0.1:${port}`
  return url.toString()
}

/** The process's database: a pool, and the notifier chosen for it (its listener through `proxy` when one is given). */
const databaseOf = (
  schema: string,
  name: string,
  proxy?: TcpProxy
): Layer.Layer<SqlClient.SqlClient | SqlDialect | Notifier, DatabaseUnavailable> => {
  const database = postgres({ url: Redacted.make(urlOf(schema, name)), pool: 4, connectTimeout: "5 seconds" })
  if (proxy === undefined) return database
  const listener = { connectionString: urlOf(schema, name, proxy.port), connectionTimeoutMillis: 5000 }
  return Layer.scoped(
    Notifier,
    Effect.flatMap(SqlClient.SqlClient, (sql) => makePgNotifier(sql, listener))
  ).pipe(Layer.provideMerge(database))
}

type Market = Layer.Layer.Success<typeof MarketServices> | SqlClient.SqlClient | Notifier

/** A marketplace process on `schema`, for the test's scope: its services, to provide to what it runs. */
const marketProcess = (schema: string, tag: string, proxy?: TcpProxy) =>
  Layer.build(
    MarketServices.pipe(
      Layer.provideMerge(migrationsLayer([marketMigrations])),
      Layer.provideMerge(databaseOf(schema, `keel-t-${tag}-${randomBytes(4).toString("hex")}`, proxy)),
      Layer.orDie
    )
  ) as Effect.Effect<Context.Context<Market>, never, Scope.Scope>

const launched = (ticker: string) =>
  Effect.gen(function* () {
    yield* (yield* TokenMarket).launch(ticker)
    yield* (yield* Ledger).mint(walletAccount(W1), toUnits("1000"), "test funding")
  }).pipe(Effect.orDie)

const buy = (ticker: string) =>
  Effect.flatMap(Trading, (trading) =>
    trading.trade({ side: "buy", ticker, wallet: W1, amount: toUnits("1"), minimum: 0n })
  ).pipe(Effect.orDie)

const committedSeqs = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ seq: string }>`SELECT seq FROM market_events ORDER BY seq`
  return rows.map((row) => Number(row.seq))
}).pipe(Effect.orDie)

/**
 * An SSE reader of `process`'s stream, from now, whose 15 s keepalive never fires (its clock is a TestClock nobody
 * moves): it reads the outbox again only when a notification (or a resync) wakes it. Its notifier is started first
 * from the live clock, so the listener's own timers (reconnects, heartbeat) keep real time. Returns the event ids
 * seen so far, in order.
 */
/** Something of a request's own in its context, as the HTTP server provides each request its HttpServerRequest. */
class Request extends Context.Tag("test/Request")<Request, string>() {}

const notifierOf = (process: Context.Context<Market>) => Context.get(process, Notifier)

const frozenReader = (process: Context.Context<Market>) =>
  Effect.gen(function* () {
    const notifier = notifierOf(process)
    const outbox = yield* notifier.subscribe(MARKET_EVENTS_CHANNEL)
    const ids: Array<number> = []
    const opened = yield* Deferred.make<void>()
    yield* Effect.flatMap(MarketEvents, (events) =>
      Stream.runForEach(events.sse(Option.none()), (frame) =>
        Effect.sync(() => {
          for (const match of frame.matchAll(/^id: (\d+)$/gm)) ids.push(Number(match[1]))
        }).pipe(Effect.zipRight(Deferred.succeed(opened, undefined)))
      )
    ).pipe(Effect.provide(process), Effect.provide(TestContext.TestContext), Effect.forkScoped)
    yield* Deferred.await(opened)
    return { ids, listening: outbox.listening }
  })

/** Waits (real time, bounded: 30 s in 25 ms steps) until `condition` holds. */
const until = (what: string, condition: Effect.Effect<boolean>) =>
  Effect.gen(function* () {
    for (let i = 0; i < 1200; i++) {
      if (yield* condition) return
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 25)))
    }
    return yield* Effect.dieMessage(`still waiting for ${what}`)
  })

const listenerPid = (process: Context.Context<Market>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ pid: number }>`SELECT pid FROM pg_stat_activity
      WHERE application_name = current_setting('application_name') || '/notify'`
    assert.strictEqual(rows.length, 1)
    return Number(rows[0]!.pid)
  }).pipe(Effect.orDie, Effect.provide(process))

const adminQuery = (client: pg.Client, text: string, params: ReadonlyArray<unknown> = []) =>
  Effect.promise(() => client.query(text, params as Array<unknown>))

const adminClient = Effect.acquireRelease(
  Effect.promise(async () => {
    const client = new pg.Client({ connectionString: testDatabaseUrl })
    await client.connect()
    return client
  }),
  (client) => Effect.promise(() => client.end())
)

describe.skipIf(postgresSkipReason !== undefined)(
  `two processes on one PostgreSQL schema${postgresSkipReason === undefined ? "" : ` (skipped: ${postgresSkipReason})`}`,
  () => {
    it.live("trades committed by A wake B's stream, whose keepalive never fires: every event once, in order", () =>
      Effect.gen(function* () {
        const schema = yield* freshSchema
        const a = yield* marketProcess(schema, "a")
        const b = yield* marketProcess(schema, "b")
        yield* launched("XA").pipe(Effect.provide(a))
        const reader = yield* frozenReader(b)
        const start = (yield* committedSeqs.pipe(Effect.provide(a))).length
        for (let i = 0; i < 5; i++) yield* buy("XA").pipe(Effect.provide(a))
        // At once: group commits of several trades (one notification per transaction).
        yield* Effect.all(
          Array.from({ length: 8 }, () => buy("XA")),
          { concurrency: "unbounded" }
        ).pipe(Effect.provide(a))
        const committed = (yield* committedSeqs.pipe(Effect.provide(b))).slice(start)
        assert.strictEqual(committed.length, 13)
        yield* until(
          "B's stream to show A's events",
          Effect.sync(() => reader.ids.length >= committed.length)
        )
        assert.deepStrictEqual(reader.ids, committed)
      }).pipe(Effect.scoped)
    )

    it.live("requests authenticating while the first subscription is made each keep their own context", () =>
      Effect.gen(function* () {
        const schema = yield* freshSchema
        const a = yield* marketProcess(schema, "a")
        const keys = Context.get(a, ApiKeys)
        const made = yield* Effect.forEach([1, 2, 3, 4, 5, 6], () => keys.create({ wallet: W1 })).pipe(Effect.orDie)
        // Six requests at once, each with something of its own in its context (as each HTTP request has its
        // HttpServerRequest), all waiting for the one LISTEN the first authentication opens. A waiter that took on
        // the subscribing fiber's context read the first request's, and answered on its socket (crash.test under
        // test:pg: five of six first trades never answered).
        const seen = yield* Effect.forEach(
          made,
          ({ key }, i) =>
            Effect.gen(function* () {
              const principal = yield* keys.authenticate(key)
              return { principal, request: yield* Request }
            }).pipe(Effect.provideService(Request, `request-${i}`)),
          { concurrency: "unbounded" }
        )
        assert.deepStrictEqual(
          seen.map(({ request }) => request),
          made.map((_, i) => `request-${i}`)
        )
        for (const { principal } of seen) assert.deepStrictEqual(principal, { kind: "wallet", address: W1 })
      }).pipe(Effect.scoped)
    )

    it.live("a key revoked through A is refused by B as soon as the notification is in; B reads no counter", () =>
      Effect.gen(function* () {
        const schema = yield* freshSchema
        const a = yield* marketProcess(schema, "a")
        const b = yield* marketProcess(schema, "b")
        const { key, info } = yield* Effect.flatMap(ApiKeys, (keys) => keys.create({ wallet: W1 })).pipe(
          Effect.provide(a),
          Effect.orDie
        )
        const authenticateOnB = Effect.flatMap(ApiKeys, (keys) => keys.authenticate(key)).pipe(Effect.provide(b))
        assert.deepStrictEqual(yield* authenticateOnB, { kind: "wallet", address: W1 })
        // While B listens it never reads the change counter: with the counter's table locked, B still answers.
        const admin = yield* adminClient
        yield* adminQuery(admin, "BEGIN")
        yield* adminQuery(admin, `LOCK TABLE ${schema}.market_api_key_changes IN ACCESS EXCLUSIVE MODE`)
        const answered = yield* authenticateOnB.pipe(
          Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => "B waited on the counter's lock" })
        )
        yield* adminQuery(admin, "ROLLBACK")
        assert.deepStrictEqual(answered, { kind: "wallet", address: W1 })

        const told = (yield* notifierOf(b).subscribe(API_KEYS_CHANNEL)).notifications
        yield* Effect.flatMap(ApiKeys, (keys) => keys.revoke(info.id)).pipe(Effect.provide(a), Effect.orDie)
        yield* Queue.take(told)
        // B's cache heard it in the same instant as this subscription (one listener, one fan-out).
        assert.strictEqual(yield* authenticateOnB, undefined)
      }).pipe(Effect.scoped)
    )

    it.live(
      "in a schema too long for `<channel>@<schema>`, the key trigger notifies the md5-named channel B listens on",
      () =>
        Effect.gen(function* () {
          const schema = yield* freshSchemaNamed(`keel_t_${"long_".repeat(10)}`)
          assert.isAbove(Buffer.byteLength(`${API_KEYS_CHANNEL}@${schema}`), 63)
          const a = yield* marketProcess(schema, "a")
          const b = yield* marketProcess(schema, "b")
          const { key, info } = yield* Effect.flatMap(ApiKeys, (keys) => keys.create({ wallet: W1 })).pipe(
            Effect.provide(a),
            Effect.orDie
          )
          const onB = Effect.flatMap(ApiKeys, (keys) => keys.authenticate(key)).pipe(Effect.provide(b))
          assert.isDefined(yield* onB)
          const told = (yield* notifierOf(b).subscribe(API_KEYS_CHANNEL)).notifications
          yield* Effect.flatMap(ApiKeys, (keys) => keys.revoke(info.id)).pipe(Effect.provide(a), Effect.orDie)
          assert.deepStrictEqual(yield* Queue.take(told), message(""))
          assert.strictEqual(yield* onB, undefined)
        }).pipe(Effect.scoped)
    )

    it.live("B's listener cut off: B reads the counter (a revoke is refused at once) until it listens again", () =>
      Effect.gen(function* () {
        const schema = yield* freshSchema
        const proxy = yield* tcpProxy(databaseServer)
        const a = yield* marketProcess(schema, "a")
        const b = yield* marketProcess(schema, "b", proxy)
        const create = Effect.flatMap(ApiKeys, (keys) => keys.create({ wallet: W1 })).pipe(
          Effect.provide(a),
          Effect.orDie
        )
        const revoke = (id: string) =>
          Effect.flatMap(ApiKeys, (keys) => keys.revoke(id)).pipe(Effect.provide(a), Effect.orDie)
        const onB = (key: string) => Effect.flatMap(ApiKeys, (keys) => keys.authenticate(key)).pipe(Effect.provide(b))
        const first = yield* create
        const second = yield* create
        const third = yield* create
        for (const made of [first, second, third]) assert.isDefined(yield* onB(made.key))
        const channel = yield* notifierOf(b).subscribe(API_KEYS_CHANNEL)
        proxy.down()
        yield* until(
          "B to notice",
          Effect.map(channel.listening, (listening) => !listening)
        )
        yield* revoke(first.info.id)
        assert.strictEqual(yield* onB(first.key), undefined, "refused on the next request, by the counter")
        assert.isDefined(yield* onB(second.key))
        assert.isDefined(yield* onB(third.key), "remembered again, while B reads the counter")
        // Revoked while B neither listens nor authenticates: its next request, listening again, refuses it.
        yield* revoke(third.info.id)
        proxy.up()
        yield* until("B to listen again", channel.listening)
        // The resync queued with it: B's cache forgot everything then, and now trusts notifications again.
        assert.deepStrictEqual(Chunk.toArray(yield* Queue.takeAll(channel.notifications)), [resync])
        assert.strictEqual(yield* onB(third.key), undefined)
        assert.isDefined(yield* onB(second.key))
        yield* revoke(second.info.id)
        assert.deepStrictEqual(yield* Queue.take(channel.notifications), message(""))
        assert.strictEqual(yield* onB(second.key), undefined)
      }).pipe(Effect.scoped)
    )

    it.live("B's listener terminated (pg_terminate_backend) while A trades: B's stream resyncs, every event once", () =>
      Effect.gen(function* () {
        const schema = yield* freshSchema
        const proxy = yield* tcpProxy(databaseServer)
        const a = yield* marketProcess(schema, "a")
        const b = yield* marketProcess(schema, "b", proxy)
        yield* launched("XB").pipe(Effect.provide(a))
        const reader = yield* frozenReader(b)
        const trades = (n: number) =>
          Effect.all(
            Array.from({ length: n }, () => buy("XB")),
            { discard: true }
          ).pipe(Effect.provide(a))
        const start = (yield* committedSeqs.pipe(Effect.provide(a))).length
        yield* trades(3)
        yield* until(
          "the first trades",
          Effect.sync(() => reader.ids.length === 3)
        )
        // The listener's backend killed, and its reconnects refused until the outage's trades have committed: they
        // notify nobody of B, so only the resync after the reconnect can show them to the frozen reader.
        proxy.refuse()
        const pid = yield* listenerPid(b)
        yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT pg_terminate_backend(${pid})`).pipe(
          Effect.provide(a),
          Effect.orDie
        )
        yield* until(
          "B to notice",
          Effect.map(reader.listening, (listening) => !listening)
        )
        yield* trades(4)
        proxy.up()
        yield* until(
          "the resync",
          Effect.sync(() => reader.ids.length === 7)
        )
        assert.notStrictEqual(yield* listenerPid(b), pid)
        yield* trades(2)
        const committed = (yield* committedSeqs.pipe(Effect.provide(a))).slice(start)
        yield* until(
          "every event",
          Effect.sync(() => reader.ids.length >= committed.length)
        )
        assert.deepStrictEqual(reader.ids, committed)
      }).pipe(Effect.scoped)
    )
  }
)
