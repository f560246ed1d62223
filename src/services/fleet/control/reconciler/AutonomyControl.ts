import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import type * as Contract from "../../../../contracts/fleet/Services.js"

// The pause and the breakers as the reconciler reports them: their shapes' home is the contract.
export type PauseState = typeof Contract.PauseState.Type

/** closed: mutations run; open: refused until the cool-down passes; half_open: one trial mutation may run. */
export type BreakerState = typeof Contract.BreakerState.Type
export type BreakerPhase = BreakerState["phase"]

export interface BreakerPolicy {
  /** Consecutive host failures that open the breaker. */
  readonly failures: number
  /** How long it stays open before one trial mutation is let through (half-open). */
  readonly cooldownSeconds: number
}

interface BreakerRow {
  readonly target: string
  readonly failures: number | string
  readonly opened_at: number | string | null
  readonly last_error: string | null
}

const iso = (ms: number | string | null) => (ms === null ? null : new Date(Number(ms)).toISOString())

/**
 * The reconciler's bounds that outlive a tick, in SQL so every process sees them: the emergency pause
 * (`ctl optimize pause|resume`) and the circuit breaker per target, fed only by mutations that failed on a
 * host (rule 4).
 */
export class AutonomyControl extends Effect.Service<AutonomyControl>()("fleet/AutonomyControl", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const pause = Effect.gen(function* () {
      const rows = yield* sql<{
        paused: number | string
        reason: string | null
        changed_by: string | null
        changed_at: number | string
      }>`SELECT paused, reason, changed_by, changed_at FROM autonomy_pause WHERE id = 1`
      const row = rows[0]
      return row === undefined
        ? ({ paused: false, reason: null, changed_by: null, changed_at: null } satisfies PauseState)
        : ({
            paused: Number(row.paused) === 1,
            reason: row.reason,
            changed_by: row.changed_by,
            changed_at: iso(row.changed_at)
          } satisfies PauseState)
    }).pipe(Effect.orDie)

    const setPause = (paused: boolean, by: string, reason: string | null) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        yield* sql`INSERT INTO autonomy_pause (id, paused, reason, changed_by, changed_at)
          VALUES (1, ${paused ? 1 : 0}, ${reason}, ${by}, ${now})
          ON CONFLICT (id) DO UPDATE SET paused = excluded.paused, reason = excluded.reason,
            changed_by = excluded.changed_by, changed_at = excluded.changed_at`
        return yield* pause
      }).pipe(Effect.orDie)

    const phaseOf = (row: BreakerRow | undefined, policy: BreakerPolicy, now: number): BreakerState => {
      if (row === undefined || row.opened_at === null)
        return {
          target: row?.target ?? "",
          phase: "closed",
          failures: Number(row?.failures ?? 0),
          opened_at: null,
          last_error: row?.last_error ?? null
        }
      const open = now - Number(row.opened_at) < policy.cooldownSeconds * 1000
      return {
        target: row.target,
        phase: open ? "open" : "half_open",
        failures: Number(row.failures),
        opened_at: iso(row.opened_at),
        last_error: row.last_error
      }
    }

    const breaker = (target: string, policy: BreakerPolicy) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const rows = yield* sql<BreakerRow>`SELECT target, failures, opened_at, last_error
          FROM autonomy_breakers WHERE target = ${target}`
        return { ...phaseOf(rows[0], policy, now), target }
      }).pipe(Effect.orDie)

    const breakers = (policy: BreakerPolicy) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const rows = yield* sql<BreakerRow>`SELECT target, failures, opened_at, last_error
          FROM autonomy_breakers ORDER BY target`
        return rows.map((row) => phaseOf(row, policy, now))
      }).pipe(Effect.orDie)

    /**
     * A mutation failed on `target`'s host. The breaker opens at the threshold; a failed trial in half-open
     * opens it again for another cool-down.
     */
    const recordFailure = (target: string, error: string, policy: BreakerPolicy) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const before = yield* breaker(target, policy)
        const failures = before.failures + 1
        const opens = failures >= policy.failures || before.phase === "half_open"
        const openedAt = opens ? now : null
        yield* sql`INSERT INTO autonomy_breakers (target, failures, opened_at, last_error, updated_at)
          VALUES (${target}, ${failures}, ${openedAt}, ${error}, ${now})
          ON CONFLICT (target) DO UPDATE SET failures = excluded.failures, opened_at = excluded.opened_at,
            last_error = excluded.last_error, updated_at = excluded.updated_at`
        return yield* breaker(target, policy)
      }).pipe(Effect.orDie)

    /** A mutation succeeded on `target`'s host: the breaker closes and its count starts over. */
    const recordSuccess = (target: string) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        yield* sql`INSERT INTO autonomy_breakers (target, failures, opened_at, last_error, updated_at)
          VALUES (${target}, 0, NULL, NULL, ${now})
          ON CONFLICT (target) DO UPDATE SET failures = 0, opened_at = NULL, last_error = NULL,
            updated_at = excluded.updated_at`
      }).pipe(Effect.orDie)

    return { pause, setPause, breaker, breakers, recordFailure, recordSuccess } as const
  })
}) {}
