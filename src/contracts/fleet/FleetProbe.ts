import * as Workflow from "@effect/workflow/Workflow"
import { Schema } from "effect"
import { ProbeFailed, ProbeResult } from "./Probe.js"

/**
 * `FleetProbe`: the control plane's durable check that it can reach a host, in three recorded steps —
 * read the registry's declaration of the host, run `uname -sr` on it through its channel, store the report
 * at `state/probes/<execution>/report.json`. It runs in `ctl serve` on the cluster's workflow engine: each
 * step's result is kept in the database, so a server killed between steps resumes at the next one on restart
 * and no finished step runs again. Each step leaves a witness object `state/probes/<execution>/<n>-<step>.<nonce>.json`
 * (one per time the step ran), which is what makes "ran exactly once" checkable from outside. The steps are
 * `services/fleet/control/probe/HostProbe.ts`, their sequencing `actors/FleetProbe.ts`.
 */
export const FleetProbe = Workflow.make({
  name: "FleetProbe",
  payload: {
    host: Schema.String,
    /** Chosen by the client: the same request id is the same execution (a retried start attaches to it). */
    request_id: Schema.String,
    /** A pause after each step (0–60000 ms): lets operators and tests watch a run step by step. */
    pause_ms: Schema.Int.pipe(Schema.between(0, 60_000))
  },
  success: ProbeResult,
  error: ProbeFailed,
  // The host is part of the key: a request id reused for another host is another run, never an attachment to a
  // run on a host the caller's grant may not cover.
  idempotencyKey: ({ host, request_id }) => `${host}/${request_id}`
})
