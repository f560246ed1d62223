import { Context, type Effect } from "effect"
import type { ReconcilePhase, StorageReconciliationFailed } from "../../../../contracts/fleet/Handoff.js"
import type { ReconcileAnswer } from "../../../../contracts/fleet/HandoffReport.js"
import type { Target } from "../registry/Schema.js"

/** One target's side of the storage-root handoff (the protocol's `StoragePhaseOperation`, docs/fleet-protocol.md). */
export interface HandoffAgentOn {
  /** The phase on the target's own files, units and leases: its answer as the target recorded it. */
  readonly phase: (
    transaction: string,
    phase: ReconcilePhase
  ) => Effect.Effect<ReconcileAnswer, StorageReconciliationFailed>
}

/**
 * The storage-root phase of each target, apart from `HostAgent` because only the handoff's graphs can run it: this
 * host's side needs the handoff engine and queue, which a graph that reaches hosts for units and beacons lacks.
 * `for(target)` is the target's own `ctl … --here --json` through its channel, or this host's phase for a `local`
 * one (the choice is made where the adapters are composed, src/layers/); `here(name)` is this host's phase for a
 * target the registry may not declare — it answers with its refusal.
 */
export class HandoffAgent extends Context.Tag("fleet/HandoffAgent")<
  HandoffAgent,
  {
    readonly for: (target: Target) => HandoffAgentOn
    readonly here: (target: string) => HandoffAgentOn
  }
>() {}
