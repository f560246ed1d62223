import { Singleton } from "@effect/cluster"
import { Duration, Effect } from "effect"
import { ServiceReconciler } from "../services/fleet/control/reconciler/ServiceReconciler.js"
import { FleetRegistry } from "../services/fleet/shared/registry/Registry.js"

/** How long to wait before asking the registry again when it says never (0) or cannot be read. */
const IDLE = Duration.minutes(1)

/**
 * The scheduled autonomy tick of `ctl serve`: every `settings.autonomy_interval_seconds` (read from the registry
 * before each wait, so a registry change takes effect at the next tick; 0 turns the schedule off), one
 * reconciliation tick. Another process's tick in progress is skipped, not waited for; a failed tick is logged
 * and the schedule goes on. The first tick comes one interval after start. Runs for ever.
 */
export const autonomyTicks = Effect.gen(function* () {
  const reconciler = yield* ServiceReconciler
  const registry = yield* FleetRegistry
  const interval = registry.read({ allowCached: true }).pipe(
    Effect.map((snapshot) => snapshot.registry.settings.autonomy_interval_seconds),
    Effect.orElseSucceed(() => 0)
  )
  const once = reconciler.tick("scheduled").pipe(
    Effect.tap((report) =>
      Effect.logInfo("autonomy tick").pipe(
        Effect.annotateLogs({ run_id: report.run_id, mode: report.mode, actions: report.actions_executed })
      )
    ),
    Effect.catchTag("TickInProgress", (busy) =>
      Effect.logInfo("autonomy tick skipped: another is running").pipe(Effect.annotateLogs("holder", busy.holder))
    ),
    Effect.catchAll((error) =>
      Effect.logWarning("autonomy tick failed").pipe(Effect.annotateLogs("detail", error.detail))
    ),
    Effect.catchAllDefect((defect) =>
      Effect.logError("autonomy tick defect").pipe(Effect.annotateLogs("defect", String(defect)))
    )
  )
  const loop = Effect.gen(function* () {
    for (;;) {
      const seconds = yield* interval
      if (seconds <= 0) {
        yield* Effect.sleep(IDLE)
        continue
      }
      yield* Effect.sleep(Duration.seconds(seconds))
      yield* once
    }
  })
  yield* loop
})

/**
 * `autonomyTicks` as a cluster singleton: on the one runner holding its shard (the only one in single mode), moving
 * with the shard when that runner dies (docs/cluster.md, "What runs where").
 */
export const AutonomyScheduleLive = Singleton.make("autonomy-tick", autonomyTicks)
