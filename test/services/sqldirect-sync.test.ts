import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Data, Deferred, Effect, Exit, Fiber, Layer } from "effect"
import { refuse, SqlDirect, type Statements, savepoint, sqliteMemory, withDialect } from "../support/keel.js"

class OutOfStock extends Data.TaggedError("OutOfStock")<{ readonly item: string }> {}

const schema = Layer.effectDiscard(
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE TABLE stock (item TEXT PRIMARY KEY, n INTEGER NOT NULL)`)
)

/** SqlDirect on an in-memory database (no second connection) or on a file (the hot connection). */
const onMemory = () => ({
  file: undefined,
  layer: SqlDirect.Default.pipe(Layer.provideMerge(schema), Layer.provideMerge(sqliteMemory), Layer.orDie)
})
const onFile = () => {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-sync-")), "keel.db")
  const client = withDialect(SqliteClient.layer({ filename: file }))
  return { file, layer: SqlDirect.Default.pipe(Layer.provideMerge(schema), Layer.provideMerge(client), Layer.orDie) }
}

const stock = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => sql<{ item: string; n: number }>`SELECT item, n FROM stock ORDER BY item`
)
const add = (db: Statements, item: string, n: number) =>
  db.run("INSERT INTO stock (item, n) VALUES (?, ?) ON CONFLICT (item) DO UPDATE SET n = n + excluded.n", [item, n])
function* take(db: Statements, item: string) {
  const [row] = yield* db.all<{ n: bigint }>("SELECT n FROM stock WHERE item = ?", [item])
  if (row === undefined || row.n <= 0n) refuse(new OutOfStock({ item }))
  yield* db.run("UPDATE stock SET n = n - 1 WHERE item = ?", [item])
  return row!.n - 1n
}

describe.each([
  ["an in-memory database (the client's connection)", onMemory],
  ["a database file (the hot connection)", onFile]
])("SqlDirect.transactionProgram on %s", (_name, setup) => {
  it.effect("commits a body that returns; integers come back as bigint", () =>
    Effect.gen(function* () {
      const direct = yield* SqlDirect
      const left = yield* direct.transactionProgram(function* (db) {
        yield* add(db, "apple", 2)
        return yield* take(db, "apple")
      })
      assert.strictEqual(left, 1n)
      assert.deepStrictEqual(yield* stock, [{ item: "apple", n: 1 }])
    }).pipe(Effect.provide(setup().layer))
  )

  it.effect(
    "refuse() rolls the whole body back and is the typed failure; a failed statement is a SqlError; a throw is a defect",
    () =>
      Effect.gen(function* () {
        const direct = yield* SqlDirect
        const refused = yield* direct
          .transactionProgram<bigint, OutOfStock>(function* (db) {
            yield* add(db, "pear", 1)
            yield* take(db, "pear")
            return yield* take(db, "pear")
          })
          .pipe(Effect.flip)
        assert.deepStrictEqual(refused, new OutOfStock({ item: "pear" }))
        const failed = yield* direct
          .transactionProgram(function* (db) {
            yield* add(db, "plum", 1)
            yield* db.run("INSERT INTO no_such_table VALUES (1)")
          })
          .pipe(Effect.flip)
        assert.strictEqual(failed._tag, "SqlError")
        const died = yield* direct
          .transactionProgram(function* (db) {
            yield* add(db, "fig", 1)
            throw new Error("a bug")
          })
          .pipe(Effect.exit)
        assert.isTrue(Exit.isFailure(died) && died.cause._tag === "Die")
        assert.deepStrictEqual(yield* stock, [])
      }).pipe(Effect.provide(setup().layer))
  )

  it.effect("a savepoint per item: a refused one is undone alone, its neighbours commit", () =>
    Effect.gen(function* () {
      const direct = yield* SqlDirect
      const results = yield* direct.transactionProgram(function* (db) {
        yield* add(db, "kiwi", 1)
        const taken: Array<bigint | string> = []
        for (const item of ["kiwi", "kiwi", "lime"]) {
          try {
            taken.push(
              yield* savepoint(
                db,
                (function* () {
                  yield* add(db, "taken", 1)
                  return yield* take(db, item)
                })()
              )
            )
          } catch (thrown) {
            taken.push(thrown instanceof Error ? thrown.message : "refused")
          }
        }
        return taken
      })
      assert.deepStrictEqual(results, [0n, "refused", "refused"])
      assert.deepStrictEqual(yield* stock, [
        { item: "kiwi", n: 0 },
        { item: "taken", n: 1 }
      ])
    }).pipe(Effect.provide(setup().layer))
  )

  it.effect("inside sql.withTransaction it is a savepoint of that transaction: a refusal undoes only itself", () =>
    Effect.gen(function* () {
      const direct = yield* SqlDirect
      const sql = yield* SqlClient.SqlClient
      yield* Effect.gen(function* () {
        yield* sql`INSERT INTO stock (item, n) VALUES ('outer', 1)`
        yield* direct.transactionProgram((db) => take(db, "nothing")).pipe(Effect.ignore)
        yield* direct.transactionProgram(function* (db) {
          yield* add(db, "inner", 1)
        })
      }).pipe(sql.withTransaction)
      assert.deepStrictEqual(yield* stock, [
        { item: "inner", n: 1 },
        { item: "outer", n: 1 }
      ])
    }).pipe(Effect.provide(setup().layer))
  )

  it.live("waits for a transaction the client's connection holds open, then sees what it committed", () =>
    Effect.gen(function* () {
      const direct = yield* SqlDirect
      const sql = yield* SqlClient.SqlClient
      const opened = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const writer = yield* Effect.fork(
        Effect.gen(function* () {
          yield* sql`INSERT INTO stock (item, n) VALUES ('held', 5)`
          yield* Deferred.succeed(opened, undefined)
          yield* Deferred.await(release)
        }).pipe(sql.withTransaction)
      )
      yield* Deferred.await(opened)
      const sync = yield* Effect.fork(direct.transactionProgram((db) => take(db, "held")))
      yield* Effect.sleep("20 millis")
      assert.isNull(sync.unsafePoll(), "the synchronous transaction waits for the open one")
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(writer)
      assert.strictEqual(yield* Fiber.join(sync), 4n)
      assert.deepStrictEqual(yield* stock, [{ item: "held", n: 4 }])
    }).pipe(Effect.provide(setup().layer))
  )
})

describe("SqlDirect.readLatest", () => {
  it.effect(
    "on a file: sees another process's commit at once, even while the client's connection holds a transaction open",
    () => {
      const { file, layer } = onFile()
      return Effect.gen(function* () {
        const direct = yield* SqlDirect
        const sql = yield* SqlClient.SqlClient
        const count = direct.readLatest(function* (db) {
          const [row] = yield* db.all<{ n: bigint }>("SELECT count(*) AS n FROM stock")
          return row!.n
        })
        const opened = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const reader = yield* Effect.fork(
          Effect.gen(function* () {
            yield* sql`SELECT count(*) FROM stock`
            yield* Deferred.succeed(opened, undefined)
            yield* Deferred.await(release)
          }).pipe(sql.withTransaction)
        )
        yield* Deferred.await(opened)
        assert.strictEqual(yield* count, 0n)
        const other = new Database(file)
        try {
          other.prepare("INSERT INTO stock (item, n) VALUES ('elsewhere', 1)").run()
        } finally {
          other.close()
        }
        assert.strictEqual(yield* count, 1n, "read without waiting for the open transaction")
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(reader)
      }).pipe(Effect.provide(layer))
    }
  )
})
