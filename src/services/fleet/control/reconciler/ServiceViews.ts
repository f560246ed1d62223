import { Clock, Effect } from "effect"
import { FleetRegistry } from "../../shared/registry/Registry.js"
import { AutonomyControl } from "./AutonomyControl.js"
import { FleetEvidence } from "./FleetEvidence.js"
import { ServiceReconciler } from "./ServiceReconciler.js"

/**
 * What operators read about the fleet's services: the listing (`ctl service list`, `GET /api/fleet/services`),
 * a fresh endpoint sweep (`ctl service verify`) and the reconciler's status (`ctl optimize status`,
 * `GET /api/fleet/services/runs/latest`).
 */
export class ServiceViews extends Effect.Service<ServiceViews>()("fleet/ServiceViews", {
  dependencies: [FleetEvidence.Default],
  effect: Effect.gen(function* () {
    const registry = yield* FleetRegistry
    const reconciler = yield* ServiceReconciler
    const evidence = yield* FleetEvidence
    const control = yield* AutonomyControl
    const latest = reconciler.latest
    const sweep = evidence.sweep

    /**
     * `ctl service list` / `GET /api/fleet/services`: every declared service with its state in the latest
     * tick's report (`unchecked` when no tick has seen it yet).
     */
    const listing = Effect.gen(function* () {
      const snapshot = yield* registry.read({ allowCached: true })
      const report = yield* latest
      const rows = new Map((report?.services ?? []).map((row) => [`${row.target}/${row.name}`, row]))
      return {
        run_id: report?.run_id ?? null,
        checked_at: report?.finished_at ?? null,
        mode: snapshot.registry.settings.autonomy_mode,
        services: snapshot.registry.targets.flatMap((target) =>
          target.services.map((service) => {
            const row = rows.get(`${target.name}/${service.name}`)
            return {
              target: target.name,
              name: service.name,
              unit: service.unit,
              kind: service.kind,
              role: service.role ?? null,
              endpoint: service.endpoint?.url ?? null,
              state: row?.decision.state ?? ("unchecked" as const),
              action: row?.decision.action ?? null,
              reason: row?.decision.reason ?? null,
              execution: row?.execution.status ?? null,
              refusal: row?.refusal ?? null
            }
          })
        )
      }
    })

    /** `ctl service verify`: a fresh endpoint sweep of every service in the service directory. */
    const verify = Effect.gen(function* () {
      const snapshot = yield* registry.read({ allowCached: true })
      const services = snapshot.registry.targets.flatMap((target) =>
        target.services.filter((s) => s.endpoint !== undefined).map((service) => ({ target, service }))
      )
      const results = yield* Effect.forEach(
        services,
        ({ service, target }) =>
          Effect.map(sweep(snapshot, service), (swept) => ({
            target: target.name,
            name: service.name,
            url: service.endpoint?.url ?? "",
            endpoint: swept.endpoint,
            probes: swept.probes
          })),
        { concurrency: 4 }
      )
      return { checked_at: new Date(yield* Clock.currentTimeMillis).toISOString(), services: results }
    })

    /** `ctl optimize status` / `GET /api/fleet/services/runs/latest`: the bounds now and the latest tick's report. */
    const status = Effect.gen(function* () {
      const snapshot = yield* registry.read({ allowCached: true })
      const settings = snapshot.registry.settings
      return {
        mode: settings.autonomy_mode,
        interval_seconds: settings.autonomy_interval_seconds,
        max_actions_per_tick: settings.max_actions_per_tick,
        pause: yield* control.pause,
        breakers: yield* control.breakers(reconciler.policyOf(snapshot)),
        latest: yield* latest
      }
    })

    return { listing, verify, status } as const
  })
}) {}
