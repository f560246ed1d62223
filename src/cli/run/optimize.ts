import { Effect, Option } from "effect"
import { AutonomyControl } from "../../services/fleet/control/reconciler/AutonomyControl.js"
import { ServiceReconciler } from "../../services/fleet/control/reconciler/ServiceReconciler.js"
import type { ServiceReport } from "../../services/fleet/control/reconciler/ServiceReport.js"
import { ServiceViews } from "../../services/fleet/control/reconciler/ServiceViews.js"
import { FleetConfig } from "../../services/fleet/shared/FleetConfig.js"
import type { Parsed } from "../Lazy.js"
import { ExitWith, emit, failWith } from "../Output.js"
import type { pauseConfig, resumeConfig } from "../optimize.js"
import { controlPlane, refused } from "./fleet.js"
import { describeRow, runFailed } from "./service.js"

const summary = (report: ServiceReport) =>
  [
    `run ${report.run_id} (${report.trigger}, mode ${report.mode}${report.pause.paused ? ", PAUSED" : ""}): ${report.actions_executed} of at most ${report.max_actions_per_tick} actions executed`,
    ...report.services
      .filter((s) => s.decision.action !== "none" || s.decision.state === "unknown")
      .map((s) => `  ${describeRow(s)}`),
    ...report.alerts.map((a) => `  alert: ${a.kind} ${a.target}/${a.service} (${a.delivery})`),
    report.write_error === null
      ? `  report: ${report.report_keys.latest}`
      : `  report NOT written: ${report.write_error}`
  ].join("\n")

/**
 * With KEEL_CONTROL_PLANE_URL set, the tick runs in the control plane (POST /api/fleet/services/runs, the grant
 * in KEEL_GRANT_FILE needs service-ensure); without it, in this process on this data dir's database (the same
 * leases, pause and breakers as a `ctl serve` sharing it).
 */
const tickSomewhere = Effect.gen(function* () {
  if (Option.isNone((yield* FleetConfig).controlPlaneUrl)) return yield* (yield* ServiceReconciler).tick("manual")
  const client = yield* controlPlane
  return (yield* client.fleet.runServices().pipe(Effect.mapError(refused))) as ServiceReport
})

export const run = ({ json }: { readonly json: boolean }) =>
  Effect.gen(function* () {
    const report = yield* tickSomewhere
    yield* emit(json, report, summary)
    if (runFailed(report) || report.write_error !== null) return yield* new ExitWith({ code: 1 })
  }).pipe(
    Effect.catchTags({
      TickInProgress: failWith(json),
      FleetRegistryUnavailable: failWith(json),
      FleetRegistryInvalid: failWith(json)
    })
  )

export const status = ({ json }: { readonly json: boolean }) =>
  Effect.gen(function* () {
    const shown = yield* (yield* ServiceViews).status
    yield* emit(json, shown, (s) =>
      [
        `mode ${s.mode}, every ${s.interval_seconds} s, at most ${s.max_actions_per_tick} actions per tick`,
        s.pause.paused
          ? `PAUSED by ${s.pause.changed_by} at ${s.pause.changed_at}: ${s.pause.reason ?? ""}`
          : "not paused",
        ...s.breakers
          .filter((b) => b.phase !== "closed" || b.failures > 0)
          .map((b) => `breaker ${b.target}: ${b.phase} (${b.failures} failures; ${b.last_error ?? ""})`),
        s.latest === null ? "no run yet" : summary(s.latest)
      ].join("\n")
    )
  }).pipe(Effect.catchTags({ FleetRegistryUnavailable: failWith(json), FleetRegistryInvalid: failWith(json) }))

export const pause = ({ by, json, reason }: Parsed<typeof pauseConfig>) =>
  Effect.gen(function* () {
    const state = yield* (yield* AutonomyControl).setPause(true, by, reason._tag === "Some" ? reason.value : null)
    yield* emit(json, state, (s) => `paused: no autonomous mutation runs until ctl optimize resume (${s.changed_at})`)
  })

export const resume = ({ by, json }: Parsed<typeof resumeConfig>) =>
  Effect.gen(function* () {
    const state = yield* (yield* AutonomyControl).setPause(false, by, null)
    yield* emit(json, state, () => "resumed")
  })
