import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Data, Effect, Exit, Layer } from "effect"
import { SqlDialect, SqlDirect, SqlTest } from "../support/keel.js"

class Refused extends Data.TaggedError("Refused")<{}> {}

const DirectTest = SqlDirect.Default.pipe(
  Layer.provideMerge(
    Layer.effectDiscard(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql`CREATE TABLE counters (name TEXT PRIMARY KEY, n INTEGER NOT NULL)`
      )
    ).pipe(Layer.provideMerge(SqlTest), Layer.orDie)
  )
)

const counters = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => sql<{ name: string; n: number }>`SELECT name, n FROM counters ORDER BY name`
)
const bump =
  (name: string) => (db: { run: (text: string, params?: ReadonlyArray<string>) => Effect.Effect<void, unknown> }) =>
    // The target's column qualified: PostgreSQL finds a bare `n` ambiguous beside `excluded.n` (docs/database.md).
    db.run("INSERT INTO counters (name, n) VALUES (?, 1) ON CONFLICT (name) DO UPDATE SET n = counters.n + 1", [name])

describe("SqlDirect: the hot-path transaction", () => {
  it.effect("commits every statement of a body that succeeds", () =>
    Effect.gen(function* () {
      const direct = yield* SqlDirect
      const answer = yield* direct.transaction((db) =>
        Effect.gen(function* () {
          yield* bump("a")(db)
          yield* bump("a")(db)
          return yield* db.all<{ n: number }>("SELECT n FROM counters WHERE name = ?", ["a"])
        })
      )
      assert.deepStrictEqual(answer, [{ n: 2 }])
      assert.deepStrictEqual(yield* counters, [{ name: "a", n: 2 }])
    }).pipe(Effect.provide(DirectTest))
  )

  it.effect("a typed failure or a defect in the body rolls all of it back, sql-template statements included", () =>
    Effect.gen(function* () {
      const direct = yield* SqlDirect
      const sql = yield* SqlClient.SqlClient
      const failed = yield* direct
        .transaction((db) =>
          Effect.gen(function* () {
            yield* bump("b")(db)
            // A statement written with the sql template joins the same transaction.
            yield* sql`INSERT INTO counters (name, n) VALUES ('c', 1)`
            return yield* new Refused()
          })
        )
        .pipe(Effect.exit)
      assert.isTrue(Exit.isFailure(failed))
      const died = yield* direct
        .transaction((db) => Effect.zipRight(bump("d")(db), Effect.die("boom")))
        .pipe(Effect.exit)
      assert.isTrue(Exit.isFailure(died))
      assert.deepStrictEqual(yield* counters, [])
    }).pipe(Effect.provide(DirectTest))
  )

  it.effect("inside sql.withTransaction it is a savepoint: its own failure undoes only itself", () =>
    Effect.gen(function* () {
      const direct = yield* SqlDirect
      const sql = yield* SqlClient.SqlClient
      yield* Effect.gen(function* () {
        yield* sql`INSERT INTO counters (name, n) VALUES ('outer', 1)`
        yield* direct.transaction((db) => Effect.zipRight(bump("inner")(db), new Refused())).pipe(Effect.ignore)
        yield* direct.transaction(bump("kept"))
      }).pipe(sql.withTransaction)
      assert.deepStrictEqual(yield* counters, [
        { name: "kept", n: 1 },
        { name: "outer", n: 1 }
      ])
    }).pipe(Effect.provide(DirectTest))
  )

  it.effect("current answers the open transaction's statements, and is a defect outside one", () =>
    Effect.gen(function* () {
      const direct = yield* SqlDirect
      yield* direct.transaction(Effect.flatMap(direct.current, bump("via-current")))
      assert.deepStrictEqual(yield* counters, [{ name: "via-current", n: 1 }])
      const outside = yield* direct.current.pipe(Effect.exit)
      assert.isTrue(Exit.isFailure(outside) && outside.cause._tag === "Die")
    }).pipe(Effect.provide(DirectTest))
  )

  it.effect(
    "concurrent transactions lose no update: 200 read-modify-writes (one at a time on SQLite, row-locked on PostgreSQL)",
    () =>
      Effect.gen(function* () {
        const direct = yield* SqlDirect
        const sql = yield* SqlClient.SqlClient
        // SQLite runs one transaction at a time (BEGIN IMMEDIATE); PostgreSQL runs them side by side and the read takes
        // the row's lock, held to the commit: either way the body keeps one connection and one transaction throughout.
        const lock = (yield* SqlDialect).name === "pg" ? " FOR UPDATE" : ""
        yield* sql`INSERT INTO counters (name, n) VALUES ('x', 0)`
        yield* Effect.forEach(
          Array.from({ length: 200 }, (_, i) => i),
          () =>
            direct.transaction((db) =>
              Effect.gen(function* () {
                const rows = yield* db.all<{ n: number }>(`SELECT n FROM counters WHERE name = 'x'${lock}`)
                // Yield between the read and the write: another fiber would interleave here without the lock.
                yield* Effect.yieldNow()
                yield* db.run("UPDATE counters SET n = ? WHERE name = 'x'", [(rows[0]?.n ?? 0) + 1])
              })
            ),
          { concurrency: 50, discard: true }
        )
        assert.deepStrictEqual(yield* counters, [{ name: "x", n: 200 }])
      }).pipe(Effect.provide(DirectTest))
  )
})
