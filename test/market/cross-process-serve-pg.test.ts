import type { ChildProcess } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { marketMigrations } from "../../src/services/market/migrations.js"
import {
  ApiKeys,
  Ledger,
  MarketServices,
  migrationsLayer,
  postgres,
  TokenMarket,
  Trading,
  toUnits,
  walletAccount
} from "../support/keel.js"
import { freshSchema, postgresSkipReason, testDatabaseUrl, urlInSchema } from "../support/pg-schema.js"
import { ctlBin, openEventStream, requestChild, startServer } from "../support/server.js"

// Two real processes on one PostgreSQL schema: a `ctl serve` (B, the built package: `npm run build` first) and this
// test's process (A, the marketplace's services on its own pool). What A commits, B's `/api/stream` shows and B's key
// cache hears, across a kill of B's listener connection. cross-process-pg.test.ts proves the same with two layer
// graphs in one process, where it can also freeze a stream's keepalive and cut a listener's network.
const W1 = "0x00000000000000000000000000000000000000e1"

const urlOf = (schema: string, name: string) => {
  const url = new URL(urlInSchema(testDatabaseUrl, schema))
  url.searchParams.set("application_name", name)
  return url.toString()
}

const serverOn = (schema: string, name: string) =>
  Effect.acquireRelease(
    Effect.promise(() => {
      const children: Array<ChildProcess> = []
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-xproc-"))
      return startServer(
        [ctlBin, "serve", "--surface", "marketplace", "--port", "0"],
        { KEEL_DATA_DIR: dataDir, KEEL_DATABASE_URL: urlOf(schema, name), KEEL_DEMO_DATA: "false" },
        children
      ).catch((error: unknown) => {
        for (const child of children) child.kill("SIGKILL")
        throw error
      })
    }),
    ({ child }) => Effect.sync(() => child.kill("SIGKILL"))
  )

/** `GET /api/stream` on B for the scope: the event ids it has sent so far, in order. */
const streamOf = (port: number) =>
  Effect.acquireRelease(
    Effect.promise(() => openEventStream(port)),
    (stream) => Effect.sync(stream.close)
  )

/** Waits (real time, bounded: 60 s in 50 ms steps) until `condition` holds. */
const until = (what: string, condition: Effect.Effect<boolean>) =>
  Effect.gen(function* () {
    for (let i = 0; i < 1200; i++) {
      if (yield* condition) return
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
    }
    return yield* Effect.dieMessage(`still waiting for ${what}`)
  })

const listenerPids = (name: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ pid: number }>`SELECT pid FROM pg_stat_activity WHERE application_name = ${`${name}/notify`}`.pipe(
      Effect.map((rows) => rows.map((row) => Number(row.pid)))
    )
  ).pipe(Effect.orDie)

const committedSeqs = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ seq: string }>`SELECT seq FROM market_events ORDER BY seq`.pipe(
    Effect.map((rows) => rows.map((row) => Number(row.seq)))
  )
).pipe(Effect.orDie)

const buys = (ticker: string, n: number) =>
  Effect.flatMap(Trading, (trading) =>
    Effect.forEach(
      Array.from({ length: n }, () => ({
        side: "buy" as const,
        ticker,
        wallet: W1,
        amount: toUnits("1"),
        minimum: 0n
      })),
      (order) => trading.trade(order),
      { discard: true }
    )
  ).pipe(Effect.orDie)

describe.skipIf(postgresSkipReason !== undefined)(
  `a ctl serve and another process on one PostgreSQL schema${postgresSkipReason === undefined ? "" : ` (skipped: ${postgresSkipReason})`}`,
  () => {
    it.live(
      "B streams every event A commits, once and in order, across a kill of its listener; a key A revokes, B refuses",
      () =>
        Effect.gen(function* () {
          const schema = yield* freshSchema
          const nameB = `keel-t-serve-${randomBytes(4).toString("hex")}`
          const b = yield* serverOn(schema, nameB)
          // A: this process, on the schema B migrated.
          const a = yield* Layer.build(
            MarketServices.pipe(
              Layer.provideMerge(migrationsLayer([marketMigrations])),
              Layer.provideMerge(
                postgres({ url: Redacted.make(urlOf(schema, "keel-t-a")), pool: 4, connectTimeout: "5 seconds" })
              ),
              Layer.orDie
            )
          )
          const inA = <X, E>(
            effect: Effect.Effect<X, E, Layer.Layer.Success<typeof MarketServices> | SqlClient.SqlClient>
          ) => Effect.provide(effect, a)

          // Keys: B remembers a key it has seen; A revokes it; B refuses it (as soon as its listener hears).
          const { key, info } = yield* inA(Effect.flatMap(ApiKeys, (keys) => keys.create({ wallet: W1 }))).pipe(
            Effect.orDie
          )
          const balanceOnB = Effect.promise(() =>
            requestChild(b.port, {
              method: "GET",
              path: `/api/coin/balance?user_id=${W1}`,
              headers: { authorization: `Bearer ${key}` }
            })
          )
          assert.strictEqual((yield* balanceOnB).status, 200)
          assert.strictEqual((yield* balanceOnB).status, 200)
          yield* inA(Effect.flatMap(ApiKeys, (keys) => keys.revoke(info.id))).pipe(Effect.orDie)
          yield* until(
            "B to refuse the revoked key",
            Effect.map(balanceOnB, (answer) => answer.status === 401)
          )
          assert.strictEqual((yield* balanceOnB).status, 401)

          // Events: B's stream shows A's trades.
          yield* inA(
            Effect.gen(function* () {
              yield* (yield* TokenMarket).launch("XS")
              yield* (yield* Ledger).mint(walletAccount(W1), toUnits("1000"), "test funding")
            })
          ).pipe(Effect.orDie)
          const stream = yield* streamOf(b.port)
          const start = (yield* inA(committedSeqs)).length
          yield* inA(buys("XS", 4))
          yield* until(
            "B's stream to show A's first trades",
            Effect.sync(() => stream.ids.length === 4)
          )

          // B's listener killed: it reconnects and resyncs; A's trades meanwhile and after all reach the stream.
          const [pid] = yield* inA(listenerPids(nameB))
          assert.isDefined(pid)
          yield* inA(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT pg_terminate_backend(${pid!})`)).pipe(
            Effect.orDie
          )
          yield* inA(buys("XS", 3))
          yield* until(
            "B's new listener",
            Effect.map(inA(listenerPids(nameB)), (pids) => pids.length === 1 && pids[0] !== pid)
          )
          yield* inA(buys("XS", 3))
          const committed = (yield* inA(committedSeqs)).slice(start)
          assert.strictEqual(committed.length, 10)
          yield* until(
            "every event on B's stream",
            Effect.sync(() => stream.ids.length >= committed.length)
          )
          assert.deepStrictEqual(stream.ids, committed)
          const logs = b.logs()
          assert.include(logs, "database notifications: connection lost")
          assert.include(logs, "database notifications: listening again")
        }).pipe(Effect.scoped),
      180_000
    )
  }
)
