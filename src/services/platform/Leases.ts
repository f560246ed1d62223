import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect, Option } from "effect"
import { Lease, LeaseHeld, LeaseNotHeld } from "../../contracts/fleet/LeaseKeeper.js"
import { orDieSql } from "./SqlEdge.js"

/** Tries of one acquire: a lease lapsing between a refused upsert and the read of its holder is tried again. */
const ACQUIRE_ATTEMPTS = 5

/**
 * A lease's TTL in whole milliseconds, at least 1: an acquired or renewed lease always expires after its
 * `renewed_at`, which is what tells it from a released one (`release`).
 */
const ttlMillis = (ttl: Duration.DurationInput) => Math.max(1, Math.ceil(Duration.toMillis(ttl)))

interface LeaseRow {
  readonly key: string
  readonly holder: string
  readonly fence: number | string
  readonly acquired_at: number | string
  readonly renewed_at: number | string
  readonly expires_at: number | string
}

// int8 columns come back as strings from pg; numbers from SQLite.
const fromRow = (row: LeaseRow) =>
  new Lease({
    key: row.key,
    holder: row.holder,
    fence: Number(row.fence),
    acquiredAt: Number(row.acquired_at),
    renewedAt: Number(row.renewed_at),
    expiresAt: Number(row.expires_at)
  })

/** Leases in SQL: every decision is one conditional statement, so it holds across processes and runners. */
export class Leases extends Effect.Service<Leases>()("platform/Leases", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    /**
     * "Now" for every lease decision. SQLite: the process clock (one machine). PostgreSQL: the database server's
     * clock, read just before the statement, so runners whose clocks are skewed still agree on who holds a lease
     * and when it lapses (else a runner ahead by more than a TTL takes a live lease).
     */
    const clock = sql.onDialectOrElse({
      pg: () =>
        sql<{ now: string }>`SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS now`.pipe(
          Effect.map((rows) => Number(rows[0]!.now))
        ),
      orElse: () => Clock.currentTimeMillis
    })

    const find = (key: string) =>
      sql<LeaseRow>`SELECT * FROM leases WHERE key = ${key}`.pipe(
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), fromRow))
      )

    const heldBy = (key: string, holder: string) =>
      Effect.gen(function* () {
        const current = yield* find(key)
        const now = yield* clock
        return yield* Option.match(
          Option.filter(current, (lease) => lease.isActive(now)),
          {
            onNone: () =>
              new LeaseNotHeld({ key, holder, detail: `lease ${key} is not held by ${holder}` }) as
                | LeaseHeld
                | LeaseNotHeld,
            onSome: (lease) =>
              lease.holder === holder
                ? new LeaseNotHeld({ key, holder, detail: `lease ${key} is not held by ${holder}` })
                : new LeaseHeld({
                    key,
                    holder: lease.holder,
                    expiresAt: lease.expiresAt,
                    detail: `lease ${key} is held by ${lease.holder} until ${new Date(lease.expiresAt).toISOString()}`
                  })
          }
        )
      })

    /** The conditional upsert: the lease, or undefined when another holder has it. */
    const upsert = (key: string, holder: string, ttl: Duration.DurationInput) =>
      Effect.gen(function* () {
        const now = yield* clock
        const expires = now + ttlMillis(ttl)
        const rows = yield* sql<LeaseRow>`
        INSERT INTO leases (key, holder, fence, acquired_at, renewed_at, expires_at)
        VALUES (${key}, ${holder}, 1, ${now}, ${now}, ${expires})
        ON CONFLICT (key) DO UPDATE SET
          fence = CASE WHEN leases.holder = excluded.holder AND leases.expires_at > ${now}
                       THEN leases.fence ELSE leases.fence + 1 END,
          acquired_at = CASE WHEN leases.holder = excluded.holder AND leases.expires_at > ${now}
                       THEN leases.acquired_at ELSE excluded.acquired_at END,
          holder = excluded.holder,
          renewed_at = excluded.renewed_at,
          expires_at = excluded.expires_at
        WHERE leases.holder = excluded.holder OR leases.expires_at <= ${now}
        RETURNING *`
        const row = rows[0]
        return row === undefined ? undefined : fromRow(row)
      })

    /** Takes the lease, or extends it when `holder` already has it; fails with LeaseHeld otherwise. */
    const acquire = Effect.fn("Leases.acquire")(function* (key: string, holder: string, ttl: Duration.DurationInput) {
      // A lease that lapses between the refused upsert and the read of its holder is simply tried again:
      // acquire fails only with LeaseHeld. Bounded: a lease that keeps lapsing under every try is a clock or
      // database fault, a defect rather than a loop.
      for (let attempt = 0; attempt < ACQUIRE_ATTEMPTS; attempt++) {
        const taken = yield* upsert(key, holder, ttl)
        if (taken !== undefined) return taken
        const why = yield* Effect.flip(heldBy(key, holder))
        if (why._tag === "LeaseHeld") return yield* Effect.fail(why)
      }
      return yield* Effect.die(new Error(`lease ${key}: refused ${ACQUIRE_ATTEMPTS} times, yet held by nobody`))
    }, orDieSql)

    /** Extends a lease its holder still has; a lapsed or taken lease fails with LeaseNotHeld or LeaseHeld. */
    const renew = Effect.fn("Leases.renew")(function* (key: string, holder: string, ttl: Duration.DurationInput) {
      const now = yield* clock
      const rows = yield* sql<LeaseRow>`
        UPDATE leases SET renewed_at = ${now}, expires_at = ${now + ttlMillis(ttl)}
        WHERE key = ${key} AND holder = ${holder} AND expires_at > ${now}
        RETURNING *`
      const row = rows[0]
      if (row !== undefined) return fromRow(row)
      return yield* Effect.flatMap(heldBy(key, holder), Effect.fail)
    }, orDieSql)

    /**
     * Ends a lease early. The row stays, so the next holder's fence still grows. A release marks the row
     * `expires_at = renewed_at` (the release's instant), which nothing else writes (an acquire or a renewal sets an
     * expiry after `renewed_at`: `ttlMillis`): so a release its holder sends again (a redelivered
     * `LeaseKeeper` `Release`, a retried `ctl lease release`) while nobody took the key since finds its own release
     * and answers it again, the same lease, instead of `LeaseNotHeld` (docs/cluster.md, "Exactly-once effects").
     * A lease that lapsed unreleased still answers `LeaseNotHeld`; one another holder took since, `LeaseHeld`.
     */
    const release = Effect.fn("Leases.release")(function* (key: string, holder: string) {
      const now = yield* clock
      const rows = yield* sql<LeaseRow>`
        UPDATE leases SET expires_at = ${now}, renewed_at = ${now}
        WHERE key = ${key} AND holder = ${holder} AND expires_at > ${now}
        RETURNING *`
      const row = rows[0]
      if (row !== undefined) return fromRow(row)
      const released = Option.filter(
        yield* find(key),
        (lease) => lease.holder === holder && lease.expiresAt === lease.renewedAt
      )
      if (Option.isSome(released)) return released.value
      return yield* Effect.flatMap(heldBy(key, holder), Effect.fail)
    }, orDieSql)

    /** The lease on `key` if one is active now. */
    const get = Effect.fn("Leases.get")(function* (key: string) {
      const now = yield* clock
      return Option.filter(yield* find(key), (lease) => lease.isActive(now))
    }, orDieSql)

    const list = Effect.fn("Leases.list")(function* (options: { readonly includeExpired?: boolean } = {}) {
      const now = yield* clock
      const rows = options.includeExpired
        ? yield* sql<LeaseRow>`SELECT * FROM leases ORDER BY key`
        : yield* sql<LeaseRow>`SELECT * FROM leases WHERE expires_at > ${now} ORDER BY key`
      return rows.map(fromRow)
    }, orDieSql)

    return { acquire, renew, release, get, list } as const
  })
}) {}
