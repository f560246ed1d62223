import { randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Context, Effect, Exit, Layer, Option, Queue, Redacted, type Scope } from "effect"
import pg from "pg"
import {
  makeInProcessNotifier,
  makePgNotifier,
  NOTIFICATIONS_KEPT,
  type Notification,
  Notifier,
  type NotifierShape,
  pgChannelName,
  postgres
} from "../support/keel.js"
import {
  freshSchema,
  freshSchemaNamed,
  postgresSkipReason,
  testDatabaseUrl,
  urlInSchema
} from "../support/pg-schema.js"
import { type TcpProxy, tcpProxy } from "../support/tcp-proxy.js"

const messages = (notifications: ReadonlyArray<Notification>) =>
  notifications.map((n) => (n._tag === "Message" ? n.payload : "<resync>"))

describe("the in-process notifier (SQLite, tests, embedding)", () => {
  it.effect("a publish reaches every subscriber of its channel in this process, payload intact, and no other", () =>
    Effect.gen(function* () {
      const notifier = yield* makeInProcessNotifier
      assert.strictEqual(notifier.reach, "process")
      const first = yield* notifier.subscribe("trades")
      const second = yield* notifier.subscribe("trades")
      const other = yield* notifier.subscribe("chat")
      yield* notifier.publish("trades", "t1")
      yield* notifier.publish("trades")
      for (const subscription of [first, second]) {
        assert.isTrue(yield* subscription.listening)
        assert.deepStrictEqual(messages(Chunk.toArray(yield* Queue.takeAll(subscription.notifications))), ["t1", ""])
      }
      assert.strictEqual(yield* Queue.size(other.notifications), 0)
    }).pipe(Effect.scoped)
  )

  it.effect("a subscriber sees what is published after it subscribed; past the bound, the newest", () =>
    Effect.gen(function* () {
      const notifier = yield* makeInProcessNotifier
      // Nobody subscribed yet: nobody to tell, nothing kept.
      yield* notifier.publish("trades", "before")
      const subscription = yield* notifier.subscribe("trades")
      for (let i = 0; i < NOTIFICATIONS_KEPT + 10; i++) yield* notifier.publish("trades", String(i))
      const kept = messages(Chunk.toArray(yield* Queue.takeAll(subscription.notifications)))
      assert.strictEqual(kept.length, NOTIFICATIONS_KEPT)
      assert.strictEqual(kept[kept.length - 1], String(NOTIFICATIONS_KEPT + 9))
      assert.notInclude(kept, "before")
    }).pipe(Effect.scoped)
  )

  it.effect("a channel name outside [a-z0-9_] (at most 30) is a defect, on publish and subscribe", () =>
    Effect.gen(function* () {
      const notifier = yield* makeInProcessNotifier
      for (const bad of ["Trades", "a@b", "", "x".repeat(31), "has space"]) {
        assert.isTrue(Exit.isFailure(yield* Effect.exit(notifier.publish(bad))), bad)
        assert.isTrue(Exit.isFailure(yield* Effect.exit(Effect.scoped(notifier.subscribe(bad)))), bad)
      }
    })
  )
})

// ---------------------------------------------------------------------------------------------------------------------

/** One statement on a connection of its own (the test's, never a notifier's). */
const admin = (text: string, params: ReadonlyArray<unknown> = []) =>
  Effect.promise(async () => {
    const client = new pg.Client({ connectionString: testDatabaseUrl })
    await client.connect()
    try {
      return (await client.query(text, params as Array<unknown>)).rows as Array<Record<string, unknown>>
    } finally {
      await client.end()
    }
  })

/**
 * A "process" on `schema`: a pool and a notifier of its own, its connections named `name` (a listener's: `name/notify`,
 * so a test finds exactly its own in pg_stat_activity among the other files').
 */
const processOn = (schema: string, name: string) =>
  Effect.gen(function* () {
    const url = new URL(urlInSchema(testDatabaseUrl, schema))
    url.searchParams.set("application_name", name)
    const layer = postgres({ url: Redacted.make(url.toString()), pool: 2, connectTimeout: "5 seconds" })
    const context = yield* Layer.build(Layer.orDie(layer))
    return { notifier: Context.get(context, Notifier), sql: Context.get(context, SqlClient.SqlClient), name }
  })

/** A notifier of `schema` whose listener reaches the server through a proxy (publishes go through `sql`, directly). */
const notifierThrough = (proxy: TcpProxy, schema: string, sql: SqlClient.SqlClient) => {
  const url = new URL(urlInSchema(testDatabaseUrl, schema))
  url.host = `127.0.0.1:${proxy.port}`
  return makePgNotifier(sql, { connectionString: url.toString(), connectionTimeoutMillis: 5000, keepAlive: true })
}

const server = new URL(testDatabaseUrl)
const databaseServer = { host: server.hostname, port: Number(server.port || 5432) }

const nameOf = (tag: string) => `keel-t-${tag}-${randomBytes(4).toString("hex")}`

const listenerPids = (name: string) =>
  Effect.map(admin("SELECT pid FROM pg_stat_activity WHERE application_name = $1", [`${name}/notify`]), (rows) =>
    rows.map((row) => Number(row.pid))
  )

/** Waits (real time, bounded: `seconds` in 25 ms steps) until `probe` answers something. */
const eventually = <A>(what: string, probe: Effect.Effect<Option.Option<A>>, seconds = 30) =>
  Effect.gen(function* () {
    for (let i = 0; i < seconds * 40; i++) {
      const answer = yield* probe
      if (Option.isSome(answer)) return answer.value
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 25)))
    }
    return yield* Effect.dieMessage(`still waiting for ${what}`)
  })

/** The next notification, within a guard against a hang (not a timing claim). */
const next = (notifications: Queue.Dequeue<Notification>) =>
  Queue.take(notifications).pipe(Effect.timeoutFail({ duration: "30 seconds", onTimeout: () => "no notification" }))

const subscribe = (
  notifier: NotifierShape,
  channel: string
): Effect.Effect<Queue.Dequeue<Notification>, never, Scope.Scope> =>
  Effect.map(notifier.subscribe(channel), (subscription) => subscription.notifications)

describe.skipIf(postgresSkipReason !== undefined)(
  `the PostgreSQL notifier (LISTEN/NOTIFY)${postgresSkipReason === undefined ? "" : ` (skipped: ${postgresSkipReason})`}`,
  () => {
    it.live("no listener connection before the first subscription, one however many subscribe, none after", () =>
      Effect.gen(function* () {
        const schema = yield* freshSchema
        const name = nameOf("lazy")
        yield* Effect.scoped(
          Effect.gen(function* () {
            const { notifier } = yield* processOn(schema, name)
            assert.strictEqual(notifier.reach, "database")
            yield* notifier.publish("trades", "nobody listens")
            assert.deepStrictEqual(yield* listenerPids(name), [])
            yield* subscribe(notifier, "trades")
            yield* subscribe(notifier, "trades")
            yield* subscribe(notifier, "chat")
            assert.strictEqual((yield* listenerPids(name)).length, 1)
          })
        )
        yield* eventually(
          "the listener to close with its layer",
          Effect.map(listenerPids(name), (pids) => (pids.length === 0 ? Option.some(true) : Option.none()))
        )
      }).pipe(Effect.scoped)
    )

    it.live("a publish by one process reaches the subscribers of every process on the schema, payload intact", () =>
      Effect.gen(function* () {
        const schema = yield* freshSchema
        const a = yield* processOn(schema, nameOf("a"))
        const b = yield* processOn(schema, nameOf("b"))
        const onA = yield* subscribe(a.notifier, "trades")
        const onB = yield* subscribe(b.notifier, "trades")
        const otherOnB = yield* subscribe(b.notifier, "chat")
        yield* a.notifier.publish("trades", "from a: ✓ 'quoted'")
        yield* a.notifier.publish("trades")
        for (const notifications of [onA, onB])
          assert.deepStrictEqual(messages([yield* next(notifications), yield* next(notifications)]), [
            "from a: ✓ 'quoted'",
            ""
          ])
        // chat heard nothing: a publish on it now is the first thing it gets.
        yield* a.notifier.publish("chat", "marker")
        assert.deepStrictEqual(messages([yield* next(otherOnB)]), ["marker"])
      }).pipe(Effect.scoped)
    )

    it.live("another schema's publish on the same channel is not heard (tests share one database)", () =>
      Effect.gen(function* () {
        const a = yield* processOn(yield* freshSchema, nameOf("a"))
        const c = yield* processOn(yield* freshSchema, nameOf("c"))
        const onC = yield* subscribe(c.notifier, "trades")
        yield* subscribe(a.notifier, "trades")
        yield* a.notifier.publish("trades", "schema a")
        // Delivered in commit order on one listener: had "schema a" reached C, it would come first.
        yield* c.notifier.publish("trades", "schema c")
        assert.deepStrictEqual(messages([yield* next(onC)]), ["schema c"])
      }).pipe(Effect.scoped)
    )

    it.live("a schema name too long for `<channel>@<schema>`: writers and the listener agree on its md5 form", () =>
      Effect.gen(function* () {
        const schema = yield* freshSchemaNamed(`keel_t_${"long_".repeat(10)}`)
        assert.isAbove(Buffer.byteLength(`market_events@${schema}`), 63)
        const a = yield* processOn(schema, nameOf("a"))
        const b = yield* processOn(schema, nameOf("b"))
        const onB = yield* subscribe(b.notifier, "market_events")
        yield* a.notifier.publish("market_events", "long")
        assert.deepStrictEqual(messages([yield* next(onB)]), ["long"])
      }).pipe(Effect.scoped)
    )

    it.live("published inside a transaction: delivered at its commit, in commit order; never for a rollback", () =>
      Effect.gen(function* () {
        const schema = yield* freshSchema
        const a = yield* processOn(schema, nameOf("a"))
        const b = yield* processOn(schema, nameOf("b"))
        const onB = yield* subscribe(b.notifier, "trades")
        yield* a.notifier
          .publish("trades", "rolled back")
          .pipe(Effect.zipRight(Effect.fail("undo")), a.sql.withTransaction, Effect.ignore)
        yield* Effect.gen(function* () {
          yield* a.notifier.publish("trades", "in the transaction")
          // Another connection (not the SqlClient's: inside its transaction every statement is the transaction's),
          // outside the open transaction: committed at once, so delivered first.
          yield* admin(`SELECT pg_notify(${pgChannelName("'trades'", "$1::text")}, 'outside')`, [schema])
        }).pipe(a.sql.withTransaction, Effect.orDie)
        assert.deepStrictEqual(messages([yield* next(onB), yield* next(onB)]), ["outside", "in the transaction"])
      }).pipe(Effect.scoped)
    )

    it.live("the network gone: not listening at once, reconnecting until it is back, then a Resync", () =>
      Effect.gen(function* () {
        const schema = yield* freshSchema
        const proxy = yield* tcpProxy(databaseServer)
        const a = yield* processOn(schema, nameOf("a"))
        const notifier = yield* notifierThrough(proxy, schema, a.sql)
        const subscription = yield* notifier.subscribe("trades")
        assert.isTrue(yield* subscription.listening)
        proxy.down()
        yield* eventually(
          "the loss to be noticed",
          Effect.map(subscription.listening, (listening) => (listening ? Option.none() : Option.some(true)))
        )
        // Published while nobody of this process listens: never delivered, which the Resync says.
        yield* a.notifier.publish("trades", "lost")
        assert.isFalse(yield* subscription.listening)
        proxy.up()
        assert.deepStrictEqual(messages([yield* next(subscription.notifications)]), ["<resync>"])
        assert.isTrue(yield* subscription.listening)
        yield* a.notifier.publish("trades", "after")
        assert.deepStrictEqual(messages([yield* next(subscription.notifications)]), ["after"])
      }).pipe(Effect.scoped)
    )

    it.live("a connection gone silent is given up within the heartbeat (5 s, answered within 5 s)", () =>
      Effect.gen(function* () {
        const schema = yield* freshSchema
        const proxy = yield* tcpProxy(databaseServer)
        const a = yield* processOn(schema, nameOf("a"))
        const notifier = yield* notifierThrough(proxy, schema, a.sql)
        const subscription = yield* notifier.subscribe("trades")
        proxy.mute()
        // Noticed within 10 s at most (the heartbeat's interval plus its answer's); waited for up to 30 s.
        yield* eventually(
          "the silent connection to be given up",
          Effect.map(subscription.listening, (listening) => (listening ? Option.none() : Option.some(true)))
        )
        proxy.up()
        assert.deepStrictEqual(messages([yield* next(subscription.notifications)]), ["<resync>"])
        yield* a.notifier.publish("trades", "after")
        assert.deepStrictEqual(messages([yield* next(subscription.notifications)]), ["after"])
      }).pipe(Effect.scoped)
    )

    it.live(
      "the listener's connection terminated: a Resync on a new connection, and what is published after arrives",
      () =>
        Effect.gen(function* () {
          const schema = yield* freshSchema
          const a = yield* processOn(schema, nameOf("a"))
          const b = yield* processOn(schema, nameOf("b"))
          const subscription = yield* b.notifier.subscribe("trades")
          assert.isTrue(yield* subscription.listening)
          const [before] = yield* listenerPids(b.name)
          yield* admin("SELECT pg_terminate_backend($1)", [before])
          // Whatever a publish during the outage became, a Resync comes: the subscriber reads again.
          yield* a.notifier.publish("trades", "during")
          const seen: Array<string> = []
          while (!seen.includes("<resync>")) seen.push(...messages([yield* next(subscription.notifications)]))
          assert.isTrue(yield* subscription.listening)
          const after = yield* listenerPids(b.name)
          assert.strictEqual(after.length, 1)
          assert.notStrictEqual(after[0], before)
          yield* a.notifier.publish("trades", "after")
          let last = ""
          while (last !== "after") last = messages([yield* next(subscription.notifications)])[0]!
        }).pipe(Effect.scoped)
    )
  }
)
