import { Effect, FiberRef } from "effect"
import type { YieldWrap } from "effect/Utils"

/**
 * `Effect.fn(name)` for the functions on the hot paths (a trade, an assignment, a collector batch): the same
 * span when tracing is on (KEEL_TRACING), and no span at all when it is off. `Effect.fn` always captures a
 * call-site stack and builds a span, a no-op one when the tracer is disabled, and copies the request's whole
 * context (≈ 80 services) to hold it: measured ≈ 10 µs a call on this machine (docs/performance.md).
 */
export const hotSpan =
  (name: string) =>
  <Eff extends YieldWrap<Effect.Effect<unknown, unknown, unknown>>, A, Args extends ReadonlyArray<unknown>>(
    body: (...args: Args) => Generator<Eff, A, never>,
    /** Applied to the body's effect inside the span, as `Effect.fn`'s pipeables are. */
    around: <X, E, R>(effect: Effect.Effect<X, E, R>) => Effect.Effect<X, E, R> = (effect) => effect
  ) =>
  (
    ...args: Args
  ): Effect.Effect<
    A,
    [Eff] extends [never] ? never : [Eff] extends [YieldWrap<Effect.Effect<infer _A, infer E, infer _R>>] ? E : never,
    [Eff] extends [never] ? never : [Eff] extends [YieldWrap<Effect.Effect<infer _A, infer _E, infer R>>] ? R : never
  > => {
    const effect = around(Effect.gen(() => body(...args)))
    return FiberRef.getWith(FiberRef.currentTracerEnabled, (enabled) =>
      enabled ? Effect.withSpan(effect, name) : effect
    ) as never
  }
