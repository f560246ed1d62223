import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, TestClock } from "effect"
import { Leases, ServicesTest } from "../support/keel.js"

const withLeases = <A, E>(f: (leases: Leases) => Effect.Effect<A, E>) =>
  Effect.flatMap(Leases, f).pipe(Effect.provide(ServicesTest()))

// These cases drive time with TestClock. On PostgreSQL a lease reads "now" from the database clock (so runners
// with skewed clocks agree), which TestClock cannot move: under test:pg they are skipped, and
// test/services/leases-pg.test.ts proves leases on PostgreSQL instead.
const onPostgres = process.env.KEEL_TEST_DATABASE_URL !== undefined

describe.skipIf(onPostgres)("Leases", () => {
  it.effect("the first holder gets fence 1; re-acquiring extends the lease and keeps the fence", () =>
    withLeases((leases) =>
      Effect.gen(function* () {
        const first = yield* leases.acquire("janitor:web-1", "run-a", "1 minute")
        assert.strictEqual(first.fence, 1)
        yield* TestClock.adjust("30 seconds")
        const again = yield* leases.acquire("janitor:web-1", "run-a", "1 minute")
        assert.strictEqual(again.fence, 1)
        assert.strictEqual(again.acquiredAt, first.acquiredAt)
        assert.strictEqual(again.expiresAt, first.expiresAt + 30_000)
      })
    )
  )

  it.effect("another holder is refused while the lease is active, with who holds it and until when", () =>
    withLeases((leases) =>
      Effect.gen(function* () {
        const held = yield* leases.acquire("release:web", "run-a", "1 minute")
        const refused = yield* Effect.flip(leases.acquire("release:web", "run-b", "1 minute"))
        assert.strictEqual(refused._tag, "LeaseHeld")
        if (refused._tag === "LeaseHeld") {
          assert.strictEqual(refused.holder, "run-a")
          assert.strictEqual(refused.expiresAt, held.expiresAt)
        }
      })
    )
  )

  it.effect("an expired lease goes to the next holder with a higher fence", () =>
    withLeases((leases) =>
      Effect.gen(function* () {
        yield* leases.acquire("handoff:db-1", "run-a", "10 seconds")
        yield* TestClock.adjust("10 seconds")
        assert.isTrue(Option.isNone(yield* leases.get("handoff:db-1")))
        const next = yield* leases.acquire("handoff:db-1", "run-b", "10 seconds")
        assert.strictEqual(next.holder, "run-b")
        assert.strictEqual(next.fence, 2)
      })
    )
  )

  it.effect("renew extends only a lease its holder still has", () =>
    withLeases((leases) =>
      Effect.gen(function* () {
        yield* leases.acquire("k", "a", "10 seconds")
        yield* TestClock.adjust("5 seconds")
        const renewed = yield* leases.renew("k", "a", "10 seconds")
        assert.strictEqual(renewed.fence, 1)
        const byOther = yield* Effect.flip(leases.renew("k", "b", "10 seconds"))
        assert.strictEqual(byOther._tag, "LeaseHeld")
        yield* TestClock.adjust("11 seconds")
        const lapsed = yield* Effect.flip(leases.renew("k", "a", "10 seconds"))
        assert.strictEqual(lapsed._tag, "LeaseNotHeld")
      })
    )
  )

  it.effect("release frees the key at once, and the next holder's fence still grows", () =>
    withLeases((leases) =>
      Effect.gen(function* () {
        yield* leases.acquire("k", "a", "1 hour")
        const released = yield* leases.release("k", "a")
        assert.strictEqual(released.fence, 1)
        assert.isTrue(Option.isNone(yield* leases.get("k")))
        // The holder's release sent again (a retry, a redelivery) answers the same release, later too.
        yield* TestClock.adjust("1 minute")
        assert.deepStrictEqual(yield* leases.release("k", "a"), released)
        const next = yield* leases.acquire("k", "b", "1 hour")
        assert.strictEqual(next.fence, 2)
        assert.deepStrictEqual(
          (yield* leases.list()).map((l) => l.key),
          ["k"]
        )
        assert.strictEqual((yield* leases.list({ includeExpired: true })).length, 1)
        // Once another holder took the key, the first holder's release is told so.
        assert.strictEqual((yield* Effect.flip(leases.release("k", "a")))._tag, "LeaseHeld")
      })
    )
  )

  it.effect("a lease that lapsed unreleased is not released by its holder after the fact: LeaseNotHeld", () =>
    withLeases((leases) =>
      Effect.gen(function* () {
        yield* leases.acquire("k", "a", "10 seconds")
        yield* TestClock.adjust("10 seconds")
        assert.strictEqual((yield* Effect.flip(leases.release("k", "a")))._tag, "LeaseNotHeld")
      })
    )
  )
})
