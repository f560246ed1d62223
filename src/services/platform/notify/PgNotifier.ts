import type { SqlClient } from "@effect/sql"
import type { PgClientConfig } from "@effect/sql-pg/PgClient"
import { Deferred, Duration, Effect, Either, Exit, FiberId, PubSub, Redacted } from "effect"
import pg from "pg"
import { checkChannel, message, NOTIFICATIONS_KEPT, type Notification, type NotifierShape, resync } from "./Notifier.js"
import { pgChannelName } from "./PgChannel.js"

/**
 * How often the listener's connection must answer, and within how long: a connection lost without a word (a network
 * gone silent) is noticed within their sum, 10 s. A closed one (a server restart, `pg_terminate_backend`) at once.
 */
const HEARTBEAT = Duration.seconds(5)
const ANSWER = Duration.seconds(5)
/** After a loss: the first try at once (a terminated backend, a restarted server), then 100 ms, doubling to 2 s. */
const reconnectDelay = (failures: number) =>
  Duration.millis(failures <= 1 ? 0 : Math.min(2000, 50 * 2 ** (failures - 1)))

/** The listener's own name in `pg_stat_activity`: the pool's, then `/notify`. */
const NAME_ITSELF =
  "SELECT set_config('application_name', left(current_setting('application_name'), 56) || '/notify', false)"

interface Listener {
  readonly client: pg.Client
  /** Done once the connection is lost: it erred or ended, or a query on it failed or went unanswered. */
  readonly lost: Deferred.Deferred<void>
  /** Gives the connection up (ends it) and marks it lost; `reason` for the log. Once. */
  readonly lose: (reason: string) => void
  readonly reason: () => string
}

interface Channel {
  readonly pubsub: PubSub.PubSub<Notification>
  listening: boolean
}

/** The listener's connection settings: the pool's (URL, credentials, TLS, connect timeout), with TCP keep-alive. */
export const listenerConfig = (config: PgClientConfig): pg.ClientConfig => ({
  connectionString: config.url === undefined ? undefined : Redacted.value(config.url),
  host: config.host,
  port: config.port,
  user: config.username,
  password: config.password === undefined ? undefined : Redacted.value(config.password),
  database: config.database,
  ssl: config.ssl,
  connectionTimeoutMillis: Duration.toMillis(config.connectTimeout ?? Duration.seconds(5)),
  application_name: config.applicationName ?? "keel",
  keepAlive: true
})

const noop = () => {}
const reasonOf = (error: unknown) => (error instanceof Error ? error.message : String(error))

/** A connection of its own (never the pool's: a pooled connection goes back to others, with its LISTENs). */
const connect = (
  config: pg.ClientConfig,
  onNotification: (n: pg.Notification) => void,
  onLost: (listener: Listener) => void
) =>
  Effect.async<Listener, Error>((resume) => {
    const client = new pg.Client(config)
    let why = ""
    const lost = Deferred.unsafeMake<void>(FiberId.none)
    const lose = (reason: string) => {
      if (why !== "") return
      why = reason || "connection lost"
      try {
        client.end().catch(noop)
      } catch {
        // Ending a client that never connected may throw at once: it is given up either way.
      }
      Deferred.unsafeDone(lost, Exit.void)
      onLost(listener)
    }
    const listener: Listener = { client, lost, lose, reason: () => why }
    client.on("error", (error) => lose(reasonOf(error)))
    client.on("end", () => lose("connection ended"))
    client.on("notification", onNotification)
    client.connect().then(
      () => resume(Effect.succeed(listener)),
      (error: unknown) => {
        lose(reasonOf(error))
        resume(Effect.fail(new Error(reasonOf(error))))
      }
    )
    return Effect.sync(() => lose("closed"))
  })

/** One statement on the listener's connection, answered within `ANSWER`; a failure gives the connection up. */
const ask = (listener: Listener, text: string) =>
  Effect.tryPromise(() => listener.client.query(text)).pipe(
    Effect.timeoutFail({ duration: ANSWER, onTimeout: () => new Error("no answer on the listener's connection") }),
    Effect.tapError((error) => Effect.sync(() => listener.lose(reasonOf(error)))),
    Effect.asVoid
  )

/** LISTEN on this schema's name of `channel`, computed by the server as writers compute it (`pgChannelName`). */
const listenTo = (listener: Listener, channel: string) =>
  ask(listener, `DO $$BEGIN EXECUTE format('LISTEN %I', ${pgChannelName(`'${channel}'`)}); END$$`)

/** Asks for an answer every `HEARTBEAT` until one fails or is late (then the connection is given up). */
const heartbeat = (listener: Listener) =>
  ask(listener, "SELECT 1").pipe(Effect.zipRight(Effect.sleep(HEARTBEAT)), Effect.forever, Effect.ignore)

/**
 * The PostgreSQL adapter: one connection of its own per process (opened at the first subscription, none before),
 * LISTENing to every channel subscribed to since, fanning each notification out to the channel's subscribers. A
 * publish is a `pg_notify` on the pool (in the fiber's transaction, if any). When the connection is lost the
 * channels stop `listening` at once; it reconnects (backing off to every 2 s), LISTENs again, and queues a `Resync`
 * for every subscriber: what was published meanwhile was never delivered.
 */
export const makePgNotifier = (sql: SqlClient.SqlClient, config: pg.ClientConfig) =>
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    const channels = new Map<string, Channel>()
    const lock = yield* Effect.makeSemaphore(1)
    const firstTry = yield* Deferred.make<void>()
    let current: Listener | undefined
    let started = false

    const onNotification = (n: pg.Notification) => {
      // This schema's names only are listened to: `<channel>@…`.
      const channel = channels.get(n.channel.slice(0, n.channel.indexOf("@")))
      if (channel !== undefined) Effect.runSync(PubSub.publish(channel.pubsub, message(n.payload ?? "")))
    }
    const onLost = (listener: Listener) => {
      if (current !== listener) return
      current = undefined
      for (const channel of channels.values()) channel.listening = false
    }

    /** After a (re)connect: every channel listened to again, then each told to resync, then `listening`. */
    const listenAll = (listener: Listener) =>
      Effect.gen(function* () {
        yield* ask(listener, NAME_ITSELF)
        for (const name of channels.keys()) yield* listenTo(listener, name)
        current = listener
        for (const channel of channels.values()) {
          yield* PubSub.publish(channel.pubsub, resync)
          // Lost again meanwhile: the next connection resyncs it.
          channel.listening = current === listener
        }
      })

    const supervise = Effect.gen(function* () {
      let failures = 0
      while (true) {
        const connected = yield* Effect.either(connect(config, onNotification, onLost))
        if (Either.isRight(connected)) {
          const listener = connected.right
          const ready = yield* Effect.isSuccess(lock.withPermits(1)(listenAll(listener)))
          yield* Deferred.succeed(firstTry, undefined)
          if (ready) {
            if (failures > 0) yield* Effect.logInfo("database notifications: listening again")
            failures = 0
            yield* Effect.race(Deferred.await(listener.lost), heartbeat(listener))
          }
          listener.lose("")
          if (failures === 0)
            yield* Effect.logWarning("database notifications: connection lost").pipe(
              Effect.annotateLogs("reason", listener.reason())
            )
        } else {
          yield* Deferred.succeed(firstTry, undefined)
          if (failures === 0)
            yield* Effect.logWarning("database notifications: cannot connect").pipe(
              Effect.annotateLogs("reason", connected.left.message)
            )
        }
        failures++
        yield* Effect.sleep(reconnectDelay(failures))
      }
    })

    const start = Effect.suspend(() => {
      if (started) return Deferred.await(firstTry)
      started = true
      return Effect.zipRight(Effect.forkIn(supervise, scope), Deferred.await(firstTry))
    })

    /** The channel's state, LISTENed to now if it is new and the connection is up. */
    const join = (name: string) =>
      lock.withPermits(1)(
        Effect.gen(function* () {
          const known = channels.get(name)
          if (known !== undefined) return known
          const channel: Channel = { pubsub: yield* PubSub.sliding<Notification>(NOTIFICATIONS_KEPT), listening: false }
          channels.set(name, channel)
          const listener = current
          if (listener !== undefined) {
            const listened = yield* Effect.isSuccess(listenTo(listener, name))
            channel.listening = listened && current === listener
          }
          return channel
        })
      )

    yield* Effect.addFinalizer(() => Effect.sync(() => current?.lose("closed")))

    const notifier: NotifierShape = {
      reach: "database",
      publish: (channel, payload = "") =>
        Effect.suspend(() =>
          sql.unsafe(`SELECT pg_notify(${pgChannelName("$1::text")}, $2)`, [checkChannel(channel), payload])
        ).pipe(Effect.orDie, Effect.asVoid),
      subscribe: (name) =>
        Effect.gen(function* () {
          checkChannel(name)
          yield* start
          const channel = yield* join(name)
          const notifications = yield* PubSub.subscribe(channel.pubsub)
          return { notifications, listening: Effect.sync(() => channel.listening) }
        })
    }
    return notifier
  })
