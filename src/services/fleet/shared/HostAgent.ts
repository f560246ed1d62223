import { Context, type Effect } from "effect"
import type { HostBeacon, UnitState } from "../../../contracts/fleet/Beacon.js"
import type {
  EndpointProbe,
  HostUnreachable,
  UnitCommandFailed,
  UnitPreflightRejected
} from "../../../contracts/fleet/HostAgent.js"
import type { Target } from "./registry/Schema.js"
import type { DeclaredUnit, EnsureResult } from "./units/ServiceManager.js"
import type { UnitDefinition } from "./units/UnitRender.js"

export type Ensured = Effect.Effect<EnsureResult, UnitCommandFailed | UnitPreflightRejected | HostUnreachable>

/**
 * What the control plane asks one host (the protocol: src/contracts/fleet/HostAgent.ts, docs/fleet-protocol.md).
 * A remote host answers through its own `ctl … --here --json` over its channel; this host answers in-process.
 */
export interface HostAgentOn {
  /** The unit as the host's service manager reads it (never a refusal: a unit that cannot be read says why). */
  readonly inspect: (unit: DeclaredUnit) => Effect.Effect<UnitState, HostUnreachable>
  /** Create, repair or reload the unit (a remote host renders it from its own registry declaration). */
  readonly ensure: (definition: UnitDefinition) => Ensured
  /** Restart the unit's process onto the binary on disk. */
  readonly kick: (definition: UnitDefinition) => Ensured
  /** Enable and start a oneshot's timer. */
  readonly reassertTimer: (unit: DeclaredUnit) => Ensured
  /** Whether `url` answers HTTP from this host. */
  readonly probe: (url: string) => Effect.Effect<EndpointProbe, HostUnreachable>
  /** The host's beacon, collected on the host now. */
  readonly beacon: Effect.Effect<HostBeacon, HostUnreachable>
  /** The host's kernel (`uname -srm` there), null when it could not be read. */
  readonly kernel: Effect.Effect<string | null>
}

/**
 * The host agent of each target: `agent.for(target)` is this host's services for a `local` channel, else the
 * target's `ctl` through its channel — the one place the choice is made (it was a ternary at every call site).
 */
export class HostAgent extends Context.Tag("fleet/HostAgent")<
  HostAgent,
  { readonly for: (target: Target) => HostAgentOn }
>() {}
