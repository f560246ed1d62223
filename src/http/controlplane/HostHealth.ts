import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { ControlPlaneApi } from "../../contracts/controlplane/Api.js"
import { HostHealth } from "../../services/fleet/control/beacon/HostHealth.js"
import { grantForHost } from "./FleetAuth.js"

/**
 * Beacons: FleetAuth checked `host-health-write` before the body was read. The beacon's host is in the body, known
 * once the service has decoded it: the service asks the request's grant for that host (grants are scoped by host).
 */
export const HostHealthLive = HttpApiBuilder.group(ControlPlaneApi, "hostHealth", (handlers) =>
  Effect.gen(function* () {
    const health = yield* HostHealth
    // `payload` is the body as sent (the contract describes it as a beacon; the service validates it).
    return handlers.handle("put", ({ payload }) => health.store(payload, grantForHost))
  })
)
