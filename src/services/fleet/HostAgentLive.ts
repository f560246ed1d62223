import { Effect, Layer } from "effect"
import { HostAgent } from "./HostAgent.js"
import { makeLocalHostAgent } from "./HostAgentLocal.js"
import { makeRemoteHostAgent } from "./HostAgentRemote.js"

/** The live agent: needs this host's ServiceManager (local targets) and RemoteCtl (the others). */
export const HostAgentLive = Layer.effect(
  HostAgent,
  Effect.gen(function* () {
    const local = yield* makeLocalHostAgent
    const remote = yield* makeRemoteHostAgent
    return { for: (target) => (target.channel === "local" ? local(target) : remote(target)) }
  })
)
