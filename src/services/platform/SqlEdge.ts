import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Predicate } from "effect"

/**
 * The repository edge's rule (DESIGN: "SqlError becomes a defect at the repository edge"): a SqlError dies as
 * itself — the defect is the SqlError, with SQL's own message and cause — and every other failure stays typed.
 */
export const orDieSql = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.catchIf(effect, (error): error is Extract<E, SqlError> => Predicate.isTagged(error, "SqlError"), Effect.die)
