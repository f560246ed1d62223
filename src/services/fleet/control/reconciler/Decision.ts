import type { UnitState } from "../../../../contracts/fleet/Beacon.js"
import type * as Contract from "../../../../contracts/fleet/Services.js"
import type { ServiceDeclaration } from "../../shared/registry/Schema.js"

/**
 * The service reconciler's decision for one declared unit, as the seed's two tables say ("Unit state and
 * service reconciliation" of seed 002). Pure: evidence in, decision out — the tick gathers the evidence
 * (beacon, sweep, host probe) and executes the decision within its mode and bounds.
 */

/** Where a fresh beacon omits a unit: what the reachability sweep found at the unit's endpoint. */
export type EndpointEvidence = typeof Contract.EndpointEvidence.Type

export interface UnitEvidence {
  readonly declaration: typeof ServiceDeclaration.Type
  /** The host's newest beacon: absent, or its freshness (reported_at within the host-silence threshold). */
  readonly beacon: "missing" | "stale" | "fresh"
  /** The unit's row in that beacon, when the beacon has one. */
  readonly row?: UnitState | undefined
  /** Whether the host channel answers now (only consulted for a silent host's beacon unit). */
  readonly channelAnswers?: boolean | undefined
  /** For a fresh beacon that omits the unit: the endpoint evidence of a fresh sweep. */
  readonly endpoint?: EndpointEvidence | undefined
  /** The unit probed on the host (observed / not-declared cases): what the host itself reports. */
  readonly probe?: UnitState | undefined
}

export type UnitDecision =
  | { readonly state: "unknown"; readonly action: "none"; readonly reason: string }
  | { readonly state: "healthy"; readonly action: "none"; readonly reason: string }
  | { readonly state: "recovery_managed"; readonly action: "none"; readonly reason: string }
  | { readonly state: "beacon_silent"; readonly action: "reassert_beacon"; readonly reason: string }
  | { readonly state: "beacon_missing"; readonly action: "none"; readonly reason: string }
  | { readonly state: "failed" | "missing"; readonly action: "ensure"; readonly reason: string }
  | { readonly state: "stale_binary"; readonly action: "kick"; readonly reason: string }
  | { readonly state: "relocated"; readonly action: "adopt"; readonly unit: string; readonly reason: string }
  | { readonly state: "identity_unresolved"; readonly action: "refuse"; readonly reason: string }
  | { readonly state: "declaration_incomplete"; readonly action: "refuse"; readonly reason: string }
  | { readonly state: "endpoint_unverified"; readonly action: "none"; readonly reason: string }

/** Whether carrying out the decision runs a command that changes the host (what Report mode never does). */
export const mutatesHost = (decision: UnitDecision) =>
  decision.action === "ensure" || decision.action === "kick" || decision.action === "reassert_beacon"

const DELETED = " (deleted)"

/** What the live process runs, against the declaration: the declared binary, a stale copy of it, or other. */
const identity = (declaration: typeof ServiceDeclaration.Type, row: UnitState) => {
  const running = row.process?.executable ?? null
  if (declaration.program === undefined || running === null) return "unknown" as const
  if (running === `${declaration.program}${DELETED}`) return "stale" as const
  if (running !== declaration.program) return "other" as const
  if (row.program_sha256 !== null && row.process?.sha256 !== null && row.process?.sha256 !== row.program_sha256)
    return "stale" as const
  return "declared" as const
}

/** Rule 2: a declaration that names only a unit path cannot be reinstalled. */
const incomplete = (declaration: typeof ServiceDeclaration.Type): UnitDecision | undefined =>
  declaration.program === undefined
    ? {
        state: "declaration_incomplete",
        action: "refuse",
        reason: `${declaration.name} names only its unit path: it cannot be reinstalled until the registry gives program and args`
      }
    : undefined

/**
 * Rule 6: the beacon (`role: beacon`, a oneshot and its timer installed by `ctl host beacon install`) cannot be
 * expressed by service ensure; its host keeps its installed timer, and its repair is reasserting that timer. The
 * one rule the reconciler's decisions and an operator's `ctl service ensure` (either side of the channel) follow.
 */
export const beaconEnsureRefusal = (declaration: typeof ServiceDeclaration.Type) =>
  declaration.role === "beacon"
    ? `${declaration.name} is the host's beacon: a service ensure cannot express its oneshot timer (rule 6); install it with ctl host beacon install, re-enable its timer with ctl service reassert`
    : undefined

const ensure = (declaration: typeof ServiceDeclaration.Type, state: "failed" | "missing", why: string): UnitDecision =>
  beaconEnsureRefusal(declaration) === undefined
    ? (incomplete(declaration) ?? { state, action: "ensure", reason: why })
    : {
        state: "beacon_missing",
        action: "none",
        reason:
          "the beacon unit is not installed: install it with ctl host beacon install (rule 6: never a service ensure)"
      }

const loaded = (row: UnitState) => row.load_state === "loaded"

export const decideUnit = (evidence: UnitEvidence): UnitDecision => {
  const { declaration } = evidence
  // Rule 5: recovery-managed units stay with the host-recovery program; never converted, never ensured here.
  if (declaration.kind === "recovery-managed")
    return { state: "recovery_managed", action: "none", reason: "kept by the fixed host-recovery program" }

  if (evidence.beacon !== "fresh") {
    // A silent host: nothing is authorized, except reasserting its beacon unit when its channel answers.
    if (declaration.role === "beacon" && evidence.channelAnswers === true)
      return {
        state: "beacon_silent",
        action: "reassert_beacon",
        reason: `the beacon is ${evidence.beacon} and the host answers: enable and verify its installed timer`
      }
    return { state: "unknown", action: "none", reason: `the beacon is ${evidence.beacon}: no evidence` }
  }
  // A fresh beacon that omits the unit: the endpoint evidence decides.
  return evidence.row === undefined ? fromEndpoint(evidence) : fromRow(declaration, evidence.row)
}

type Declaration = UnitEvidence["declaration"]

/** A fresh beacon's row for the unit decides. */
const fromRow = (declaration: Declaration, row: UnitState): UnitDecision => {
  if (row.error !== null)
    return { state: "unknown", action: "none", reason: `the unit could not be read: ${row.error}` }
  if (row.load_state === "not-found")
    return ensure(declaration, "missing", "the host reports the unit absent: create it from its declaration")
  if (row.active_state === "failed")
    return declaration.role === "beacon"
      ? {
          state: "beacon_silent",
          action: "reassert_beacon",
          reason: "the beacon unit failed: enable and verify its timer (rule 6: never a service ensure)"
        }
      : ensure(declaration, "failed", "the unit failed: restart a matching definition, or reload a changed one")
  switch (identity(declaration, row)) {
    case "stale":
      return {
        state: "stale_binary",
        action: "kick",
        reason: "the live process runs a stale copy of its declared binary"
      }
    case "other":
      return {
        state: "identity_unresolved",
        action: "refuse",
        reason: `the live process runs ${row.process?.executable}, not the declared ${declaration.program}`
      }
    default:
      return { state: "healthy", action: "none", reason: `${row.active_state ?? "loaded"}, as declared` }
  }
}

/** The unit as probed on the host: adopted where it runs the declared program (from another path), else refused. */
const adoptOrRefuse = (declaration: Declaration, probe: UnitState | undefined): UnitDecision => {
  if (probe === undefined || !loaded(probe) || identity(declaration, probe) !== "declared")
    return {
      state: "identity_unresolved",
      action: "refuse",
      reason:
        "the unit's ownership cannot be proven (not loaded, or its live process is not the declared program): no duplicate is created"
    }
  const at = probe.fragment_path ?? declaration.unit
  return at === declaration.unit
    ? { state: "healthy", action: "none", reason: "probed on the host: loaded and running the declared program" }
    : {
        state: "relocated",
        action: "adopt",
        unit: at,
        reason: `the host runs it from ${at}: adopt that path in the registry`
      }
}

/** A fresh beacon without the unit: the sweep's endpoint evidence, and the host's own probe, decide. */
const fromEndpoint = (evidence: UnitEvidence): UnitDecision => {
  const { declaration, probe } = evidence
  switch (evidence.endpoint) {
    case "observed":
      return adoptOrRefuse(declaration, probe)
    case "unreachable":
      return ensure(declaration, "missing", "its endpoint is unreachable: ensure the unit")
    case "not_declared":
      // The host channel is the only evidence here: a host that cannot be asked proves nothing either way.
      if (probe === undefined)
        return {
          state: "unknown",
          action: "none",
          reason: "not in the service directory and the host could not be probed"
        }
      if (probe.load_state === "not-found")
        return ensure(declaration, "missing", "not in the service directory and the host reports it absent: ensure it")
      return adoptOrRefuse(declaration, probe)
    default:
      return {
        state: "endpoint_unverified",
        action: "none",
        reason: "the sweep could not verify its endpoint: nothing changes"
      }
  }
}
