import { Activity, DurableClock } from "@effect/workflow"
import { Effect, Schema } from "effect"
import { FleetProbe } from "../contracts/fleet/FleetProbe.js"
import { ProbeFailed } from "../contracts/fleet/Probe.js"
import { HostProbe, probeKey } from "../services/fleet/control/probe/HostProbe.js"

/** The probe's three steps as recorded activities, each followed by the run's optional pause (contract: `FleetProbe`). */
export const FleetProbeLive = FleetProbe.toLayer(
  Effect.fn(function* (payload, executionId) {
    const probe = yield* HostProbe
    const pause = (name: string) =>
      payload.pause_ms === 0 ? Effect.void : DurableClock.sleep({ name, duration: payload.pause_ms })

    const declared = yield* Activity.make({
      name: "registry",
      success: Schema.Struct({ digest: Schema.String }),
      error: ProbeFailed,
      execute: probe.declared(executionId, payload.host)
    })
    yield* pause("after-registry")

    const reached = yield* Activity.make({
      name: "reach",
      success: Schema.Struct({ kernel: Schema.String }),
      error: ProbeFailed,
      execute: probe.reach(executionId, payload.host)
    })
    yield* pause("after-reach")

    const result = { host: payload.host, registry_digest: declared.digest, kernel: reached.kernel }
    yield* Activity.make({ name: "report", execute: Effect.asVoid(probe.report(executionId, result)) })
    return { ...result, report_key: probeKey(executionId, "report.json") }
  })
)
