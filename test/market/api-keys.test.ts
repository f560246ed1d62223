import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Deferred, Effect, Fiber, Layer } from "effect"
import { AllMigrations, ApiKeys, migrationsLayer, withDialect } from "../support/keel.js"

/** ApiKeys on a database file, as the server runs it: another process can open the same file. */
const onFile = () => {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-keys-")), "keel.db")
  const layer = ApiKeys.Default.pipe(
    Layer.provideMerge(migrationsLayer(AllMigrations)),
    Layer.provideMerge(withDialect(SqliteClient.layer({ filename: file })))
  )
  return { file, layer }
}

const WALLET = "0x00000000000000000000000000000000000000b1"

describe("API key authentication with its cache of live keys", () => {
  it.effect("a key revoked by another process (ctl on the same file) is refused on the next request", () => {
    const { file, layer } = onFile()
    return Effect.gen(function* () {
      const keys = yield* ApiKeys
      const { key, info } = yield* keys.create({ wallet: WALLET })
      // Twice: the second answer comes from the cache.
      assert.deepStrictEqual(yield* keys.authenticate(key), { kind: "wallet", address: WALLET })
      assert.deepStrictEqual(yield* keys.authenticate(key), { kind: "wallet", address: WALLET })
      const other = new Database(file)
      try {
        other.prepare("UPDATE market_api_keys SET revoked_at = ? WHERE id = ?").run(Date.now(), info.id)
      } finally {
        other.close()
      }
      assert.strictEqual(yield* keys.authenticate(key), undefined)
    }).pipe(Effect.provide(layer))
  })

  it.effect("a revoke by another process is seen even while another request holds a read transaction open", () => {
    const { file, layer } = onFile()
    return Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const keys = yield* ApiKeys
      const { key, info } = yield* keys.create({ wallet: WALLET })
      assert.deepStrictEqual(yield* keys.authenticate(key), { kind: "wallet", address: WALLET })
      // Another request's read transaction (a plain BEGIN, then a read) stays open on the shared connection,
      // while ctl revokes the key on the same file and the key is presented again.
      const opened = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const reader = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            yield* sql`SELECT count(*) FROM market_api_keys`
            yield* Deferred.succeed(opened, undefined)
            yield* Deferred.await(release)
          })
        )
        .pipe(Effect.fork)
      yield* Deferred.await(opened)
      const other = new Database(file)
      try {
        other.prepare("UPDATE market_api_keys SET revoked_at = ? WHERE id = ?").run(Date.now(), info.id)
      } finally {
        other.close()
      }
      const presented = yield* Effect.fork(keys.authenticate(key))
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(reader)
      assert.strictEqual(yield* Fiber.join(presented), undefined)
    }).pipe(Effect.provide(layer))
  })

  it.effect("a key revoked through the service is refused at once; other keys still work", () => {
    const { layer } = onFile()
    return Effect.gen(function* () {
      const keys = yield* ApiKeys
      const first = yield* keys.create({ wallet: WALLET })
      const second = yield* keys.create({ wallet: WALLET })
      assert.isDefined(yield* keys.authenticate(first.key))
      assert.isDefined(yield* keys.authenticate(second.key))
      yield* keys.revoke(first.info.id)
      assert.strictEqual(yield* keys.authenticate(first.key), undefined)
      assert.deepStrictEqual(yield* keys.authenticate(second.key), { kind: "wallet", address: WALLET })
      // An unknown key is never remembered: created later (here or elsewhere), it works at once.
      assert.strictEqual(yield* keys.authenticate("keel_not_a_key_yet"), undefined)
    }).pipe(Effect.provide(layer))
  })

  it.effect("the key-change counter moves on an update or delete of a key by any process, and on nothing else", () => {
    const { file, layer } = onFile()
    return Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const keys = yield* ApiKeys
      const counter = sql<{ n: number }>`SELECT n FROM market_api_key_changes WHERE id = 1`.pipe(
        Effect.map((rows) => Number(rows[0]!.n))
      )
      const start = yield* counter
      const { key, info } = yield* keys.create({ wallet: WALLET })
      yield* sql`INSERT INTO market_events (kind, payload, created_at) VALUES ('trade', '{}', 1)`
      assert.strictEqual(yield* counter, start, "a new key or another write does not move it")
      assert.deepStrictEqual(yield* keys.authenticate(key), { kind: "wallet", address: WALLET })
      const other = new Database(file)
      try {
        other.prepare("DELETE FROM market_api_keys WHERE id = ?").run(info.id)
      } finally {
        other.close()
      }
      assert.strictEqual(yield* counter, start + 1)
      assert.strictEqual(yield* keys.authenticate(key), undefined, "a key deleted by another process is refused")
    }).pipe(Effect.provide(layer))
  })
})
