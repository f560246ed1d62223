import { Effect } from "effect"
import { StorageReconciliationFailed } from "../../../../contracts/fleet/Handoff.js"
import type { HandoffReport, ReconcileAnswer } from "../../../../contracts/fleet/HandoffReport.js"
import type { FleetRegistry } from "../registry/Registry.js"

// What both sides of a storage-root handoff agree on: the control plane (which holds a remote target's lease) and
// the target's own agent (which holds it for a phase on its host) name the same lease and read the same target.

/** The lease that makes one transaction per target at a time: held by the open transaction until it ends. */
export const transactionLeaseKey = (target: string) => `handoff:${target}`

/** A registry target by name (undefined when the registry has none): the one lookup of the handoff's phases and steps. */
export const declaredTarget = (registry: FleetRegistry, name: string) =>
  Effect.map(registry.read({ allowCached: true }), (snapshot) => snapshot.registry.targets.find((t) => t.name === name))

/** How long an open transaction holds its target's lease at most (it is released when the transaction ends). */
export const OPEN_TRANSACTION_TTL = "30 days"

export const reconcileFailed = (detail: string) =>
  new StorageReconciliationFailed({ code: "STORAGE_RECONCILIATION_FAILED", detail })

/** A phase refused before it changed anything (exit 2), with the report it refers to or the refusal itself. */
export const refusedPhase = (refusal: string, detail: string, report: HandoffReport = null): ReconcileAnswer => ({
  exit_code: 2,
  refusal,
  report: report ?? { refusal, detail }
})
