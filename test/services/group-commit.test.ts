import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Cause, Data, Deferred, Effect, Exit, Fiber, Layer, Scope } from "effect"
import { type DirectStatements, GroupCommit, makeGroupCommit, SqlDirect, SqlTest } from "../support/keel.js"

class Refused extends Data.TaggedError("Refused")<{}> {}

// `children.parent` is checked at COMMIT (a deferred foreign key): a way to make a commit itself fail.
const GroupTest = Layer.mergeAll(GroupCommit.Default, SqlDirect.Default).pipe(
  Layer.provideMerge(
    Layer.effectDiscard(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        // SQLite checks foreign keys only when asked; PostgreSQL always does.
        yield* sql.onDialectOrElse({ sqlite: () => sql`PRAGMA foreign_keys = ON`, orElse: () => Effect.void })
        yield* sql`CREATE TABLE counters (name TEXT PRIMARY KEY, n INTEGER NOT NULL)`
        yield* sql`CREATE TABLE parents (id INTEGER PRIMARY KEY)`
        yield* sql`CREATE TABLE children (id INTEGER PRIMARY KEY,
          parent INTEGER NOT NULL REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED)`
      })
    ).pipe(Layer.provideMerge(SqlTest), Layer.orDie)
  )
)

const counters = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => sql<{ name: string; n: number }>`SELECT name, n FROM counters ORDER BY name`
)
const bump = (name: string) => (db: DirectStatements) =>
  Effect.as(
    db.run("INSERT INTO counters (name, n) VALUES (?, 1) ON CONFLICT (name) DO UPDATE SET n = counters.n + 1", [name]),
    name
  )
const outcome = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isSuccess(exit)
    ? `ok ${exit.value}`
    : exit.cause._tag === "Fail"
      ? `fail ${(exit.cause.error as { _tag?: string })._tag}`
      : exit.cause._tag === "Die"
        ? "die"
        : exit.cause._tag

describe("GroupCommit: writes submitted together share one transaction", () => {
  it.effect("a refused write rolls back only itself; its neighbours commit and each caller gets its own answer", () =>
    Effect.gen(function* () {
      const groups = yield* GroupCommit
      const exits = yield* Effect.all(
        [
          groups.submit(bump("a")),
          groups.submit((db) => Effect.zipRight(bump("x")(db), new Refused())),
          groups.submit((db) => Effect.zipRight(bump("y")(db), Effect.die("boom"))),
          groups.submit(bump("b"))
        ].map(Effect.exit),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(exits.map(outcome), ["ok a", "fail Refused", "die", "ok b"])
      assert.deepStrictEqual(yield* counters, [
        { name: "a", n: 1 },
        { name: "b", n: 1 }
      ])
    }).pipe(Effect.provide(GroupTest))
  )

  it.effect("a group whose writes all succeed runs each once; one failure re-runs the group, isolated", () =>
    Effect.gen(function* () {
      const groups = yield* GroupCommit
      const runs = new Map<string, number>()
      const counted =
        (name: string, fail = false) =>
        (db: DirectStatements) =>
          Effect.suspend(() => {
            runs.set(name, (runs.get(name) ?? 0) + 1)
            return fail ? Effect.zipRight(bump(name)(db), new Refused()) : bump(name)(db)
          })
      const together = (writes: ReadonlyArray<(db: DirectStatements) => Effect.Effect<string, unknown>>) =>
        Effect.all(
          writes.map((write) => Effect.exit(groups.submit(write))),
          { concurrency: "unbounded" }
        )
      const clean = yield* together([counted("a"), counted("b"), counted("c")])
      assert.deepStrictEqual(clean.map(outcome), ["ok a", "ok b", "ok c"])
      assert.deepStrictEqual([...runs.values()], [1, 1, 1])
      runs.clear()
      const mixed = yield* together([counted("a"), counted("x", true), counted("b")])
      assert.deepStrictEqual(mixed.map(outcome), ["ok a", "fail Refused", "ok b"])
      // The first pass stopped at x and was rolled back; the isolated pass ran all three once more.
      assert.deepStrictEqual(Object.fromEntries(runs), { a: 2, x: 2, b: 1 })
      assert.deepStrictEqual(yield* counters, [
        { name: "a", n: 2 },
        { name: "b", n: 2 },
        { name: "c", n: 1 }
      ])
    }).pipe(Effect.provide(GroupTest))
  )

  it.effect("a commit that fails fails every write of its group, and none of them is stored", () =>
    Effect.gen(function* () {
      const groups = yield* GroupCommit
      const exits = yield* Effect.all(
        [
          groups.submit(bump("a")),
          // Accepted by its statement, refused at COMMIT: no parent 999.
          groups.submit((db) => Effect.as(db.run("INSERT INTO children (id, parent) VALUES (1, 999)"), "orphan")),
          groups.submit(bump("b"))
        ].map(Effect.exit),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(
        exits.map((exit) => Exit.isFailure(exit)),
        [true, true, true],
        "the three were one transaction: its failed commit answered all of them"
      )
      assert.deepStrictEqual(yield* counters, [])
      // The next group is served as usual.
      assert.strictEqual(yield* groups.submit(bump("c")), "c")
      assert.deepStrictEqual(yield* counters, [{ name: "c", n: 1 }])
    }).pipe(Effect.provide(GroupTest))
  )

  it.effect("writes submitted one after another are each committed before their caller is answered", () =>
    Effect.gen(function* () {
      const groups = yield* GroupCommit
      for (let i = 0; i < 5; i++) {
        yield* groups.submit(bump("seq"))
        assert.deepStrictEqual(yield* counters, [{ name: "seq", n: i + 1 }])
      }
    }).pipe(Effect.provide(GroupTest))
  )

  it.effect("inside a caller's transaction a write is a savepoint of it, and rolls back with it", () =>
    Effect.gen(function* () {
      const groups = yield* GroupCommit
      const direct = yield* SqlDirect
      const exit = yield* direct
        .transaction(Effect.zipRight(groups.submit(bump("inner")), new Refused()))
        .pipe(Effect.exit)
      assert.strictEqual(outcome(exit), "fail Refused")
      assert.deepStrictEqual(yield* counters, [])
    }).pipe(Effect.provide(GroupTest))
  )
})

describe("makeGroupCommit: the group-commit kernel of product writes and trades", () => {
  it.live(
    "what one partition receives in one turn is one commit, in arrival order; partitions and maxGroup split groups",
    () =>
      Effect.gen(function* () {
        const commits: Array<[string, ReadonlyArray<number>]> = []
        const groups = yield* makeGroupCommit<string, number, number, never>({
          commit: (partition, items) =>
            Effect.sync(() => {
              commits.push([partition, items])
              return items.map((item) => Exit.succeed(item * 10))
            }),
          maxGroup: 3
        })
        const answers = yield* Effect.all(
          [1, 2, 3, 4].map((n) => groups.submit("a", n)).concat([groups.submit("b", 5)]),
          { concurrency: "unbounded" }
        )
        assert.deepStrictEqual(answers, [10, 20, 30, 40, 50])
        assert.deepStrictEqual(commits, [
          ["a", [1, 2, 3]],
          ["a", [4]],
          ["b", [5]]
        ])
      }).pipe(Effect.scoped)
  )

  it.live("serial: what arrives while a group commits waits for it and forms the next group", () =>
    Effect.gen(function* () {
      const commits: Array<ReadonlyArray<number>> = []
      const release = yield* Deferred.make<void>()
      const groups = yield* makeGroupCommit<"w", number, number, never>({
        commit: (_partition, items) =>
          Effect.gen(function* () {
            commits.push(items)
            if (commits.length === 1) yield* Deferred.await(release)
            return items.map((item) => Exit.succeed(item))
          }),
        serial: true
      })
      const first = yield* Effect.fork(groups.submit("w", 1))
      yield* Effect.yieldNow().pipe(Effect.repeatN(50))
      yield* Effect.sleep("10 millis")
      const later = yield* Effect.fork(Effect.all([groups.submit("w", 2), groups.submit("w", 3)], { concurrency: 2 }))
      yield* Effect.sleep("10 millis")
      // The second group has not started while the first one commits.
      assert.deepStrictEqual(commits, [[1]])
      yield* Deferred.succeed(release, undefined)
      assert.strictEqual(yield* Fiber.join(first), 1)
      assert.deepStrictEqual(yield* Fiber.join(later), [2, 3])
      assert.deepStrictEqual(commits, [[1], [2, 3]])
    }).pipe(Effect.scoped)
  )

  it.live("closing the scope that built it interrupts the groups in flight, and their callers are answered", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const started = yield* Deferred.make<void>()
      const groups = yield* makeGroupCommit<string, number, number, never>({
        commit: () => Effect.zipRight(Deferred.succeed(started, undefined), Effect.never)
      }).pipe(Scope.extend(scope))
      const caller = yield* Effect.fork(groups.submit("p", 1))
      yield* Deferred.await(started)
      yield* Scope.close(scope, Exit.void)
      const exit = yield* Fiber.await(caller)
      assert.isTrue(Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause))
    })
  )
})
