import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { ControlPlaneApi } from "../../contracts/controlplane/Api.js"
import { AuthorityUnavailable } from "../../contracts/fleet/Authority.js"
import { Gates } from "../../services/fleet/control/gates/Gates.js"
import { FleetHosts } from "../../services/fleet/control/overview/FleetHosts.js"
import { Overview } from "../../services/fleet/control/overview/Overview.js"
import { ServiceReconciler } from "../../services/fleet/control/reconciler/ServiceReconciler.js"
import { ServiceViews } from "../../services/fleet/control/reconciler/ServiceViews.js"
import { grantForHost } from "./FleetAuth.js"

/** Fleet reads: authorized by FleetAuth (`fleet-read`), answered by the services the CLI uses, in the same JSON. */
export const FleetLive = HttpApiBuilder.group(ControlPlaneApi, "fleet", (handlers) =>
  Effect.gen(function* () {
    const hosts = yield* FleetHosts
    const gates = yield* Gates
    const overview = yield* Overview
    const reconciler = yield* ServiceReconciler
    const views = yield* ServiceViews
    const registryUnavailable = (error: { readonly detail: string }) =>
      Effect.fail(new AuthorityUnavailable({ code: "REGISTRY_UNAVAILABLE", detail: error.detail }))
    return handlers
      .handle("hosts", () => hosts.list().pipe(Effect.catchAll(registryUnavailable)))
      .handle("gates", ({ path }) => Effect.zipRight(grantForHost(path.host), gates.report(path.host)))
      .handle("overview", () => overview.report())
      .handle("services", () => views.listing.pipe(Effect.catchAll(registryUnavailable)))
      .handle("serviceRunsLatest", () => views.status.pipe(Effect.catchAll(registryUnavailable)))
      .handle("runServices", () =>
        reconciler.tick("manual").pipe(
          Effect.catchTags({
            FleetRegistryUnavailable: registryUnavailable,
            FleetRegistryInvalid: registryUnavailable,
            // Only a converge names one service; a tick cannot fail this way.
            UnknownService: Effect.die
          })
        )
      )
  })
)
