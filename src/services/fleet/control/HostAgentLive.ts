import { Effect, Layer } from "effect"
import { makeLocalHostAgent } from "../agent/HostAgentLocal.js"
import { HostAgent } from "../shared/HostAgent.js"
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
