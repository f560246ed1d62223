import { Effect, Layer } from "effect"
import { makeLocalHostAgent } from "../services/fleet/agent/HostAgentLocal.js"
import { makeLocalHandoffAgent } from "../services/fleet/agent/handoff/HandoffAgentLocal.js"
import type { HandoffEngine } from "../services/fleet/agent/handoff/HandoffEngine.js"
import { HandoffHere } from "../services/fleet/agent/handoff/HandoffHere.js"
import { makeRemoteHostAgent } from "../services/fleet/control/HostAgentRemote.js"
import { makeRemoteHandoffAgent } from "../services/fleet/control/handoff/HandoffAgentRemote.js"
import { StorageReconcile } from "../services/fleet/control/handoff/StorageReconcile.js"
import { HostAgent } from "../services/fleet/shared/HostAgent.js"
import { HandoffAgent } from "../services/fleet/shared/handoff/HandoffAgent.js"

// Each target's agent, chosen here (the one place): this host's own services for a `local` target, the target's
// `ctl … --here --json` through its channel for the others (docs/fleet-protocol.md).

/** The live agent: needs this host's ServiceManager (local targets) and RemoteCtl (the others). */
export const HostAgentLive = Layer.effect(
  HostAgent,
  Effect.gen(function* () {
    const local = yield* makeLocalHostAgent
    const remote = yield* makeRemoteHostAgent
    return { for: (target) => (target.channel === "local" ? local(target) : remote(target)) }
  })
)

/** Each target's side of the storage-root handoff: needs this host's HandoffHere (local targets) and RemoteCtl. */
export const HandoffAgentLive = Layer.effect(
  HandoffAgent,
  Effect.gen(function* () {
    const local = yield* makeLocalHandoffAgent
    const remote = yield* makeRemoteHandoffAgent
    return { for: (target) => (target.channel === "local" ? local(target.name) : remote(target)), here: local }
  })
)

/**
 * The control plane's storage-root handoff with each target's side of it (HandoffAgent), this host's phases run on
 * `engine` (in-process, or a detached worker).
 */
export const storageReconcileOn = <E, R>(engine: Layer.Layer<HandoffEngine, E, R>) =>
  StorageReconcile.Default.pipe(
    Layer.provideMerge(HandoffAgentLive),
    Layer.provideMerge(HandoffHere.Default),
    Layer.provide(engine)
  )
