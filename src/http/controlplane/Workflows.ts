import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { ControlPlaneApi } from "../../contracts/controlplane/Api.js"
import { ProbeRuns } from "../../services/fleet/control/probe/ProbeRuns.js"
import { RunHandover } from "../../services/fleet/control/releases/RunHandover.js"
import { grantForHost } from "./FleetAuth.js"

/** FleetProbe and ReleaseRun runs: started without waiting (the run lives in the server), read back by id. */
export const WorkflowsLive = HttpApiBuilder.group(ControlPlaneApi, "workflows", (handlers) =>
  Effect.gen(function* () {
    const probes = yield* ProbeRuns
    const releases = yield* RunHandover
    return (
      handlers
        .handle("startProbe", ({ payload }) =>
          // The probe runs a command on the host: the grant must cover it, as every route naming a host asks. The
          // host is in the body, which FleetAuth does not read: the handler asks for it.
          Effect.zipRight(grantForHost(payload.host), probes.start(payload))
        )
        // A run is its host's, known once the run is found: the service asks the grant for it before answering.
        .handle("probeStatus", ({ path }) => probes.status(path.execution_id, grantForHost))
        .handle("startReleaseRun", ({ payload }) => releases.start(payload.run_id))
        .handle("releaseRunStatus", ({ path }) => releases.status(path.run_id))
    )
  })
)
