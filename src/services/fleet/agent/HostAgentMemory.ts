import { Effect, Layer } from "effect"
import { type EndpointProbe, HostUnreachable } from "../../../contracts/fleet/HostAgent.js"
import { HostAgent, type HostAgentOn } from "../shared/HostAgent.js"
import type { Target } from "../shared/registry/Schema.js"
import { makeMemoryServiceManager } from "../shared/units/MemoryServiceManager.js"
import { ServiceManager } from "../shared/units/ServiceManager.js"
import { collectBeacon } from "./beacon/BeaconWriter.js"

type MemoryHost = ReturnType<typeof makeMemoryServiceManager>

/**
 * Every target's host agent in memory, for tests and embedders: one memory service manager per target (created on
 * first use), endpoint answers per `from url` (`*`: any host), hosts whose channel does not answer, and one
 * kernel for all. Local and remote targets alike: what a test checks is the caller's side of the protocol.
 */
export const makeMemoryHostAgent = (options: { readonly kernel?: string } = {}) => {
  const hosts = new Map<string, MemoryHost>()
  const silent = new Set<string>()
  const endpoints = new Map<string, EndpointProbe>()
  const host = (name: string) => {
    let found = hosts.get(name)
    if (found === undefined) {
      found = makeMemoryServiceManager()
      hosts.set(name, found)
    }
    return found
  }
  const on = (target: Target): HostAgentOn => {
    const reach = <A, E>(run: (memory: MemoryHost) => Effect.Effect<A, E>) =>
      Effect.suspend(
        (): Effect.Effect<A, E | HostUnreachable> =>
          silent.has(target.name)
            ? Effect.fail(new HostUnreachable({ target: target.name, detail: `${target.name} does not answer` }))
            : run(host(target.name))
      )
    return {
      inspect: (unit) => reach((m) => m.manager.inspect(unit)),
      ensure: (definition) => reach((m) => m.manager.ensure(definition)),
      kick: (definition) => reach((m) => m.manager.kick(definition)),
      reassertTimer: (unit) => reach((m) => m.manager.reassertTimer(unit)),
      probe: (url: string) =>
        reach(() =>
          Effect.succeed(endpoints.get(`${target.name} ${url}`) ?? endpoints.get(`* ${url}`) ?? "unreachable")
        ),
      beacon: reach((m) => collectBeacon(target).pipe(Effect.provideService(ServiceManager, m.manager))),
      kernel: Effect.sync(() => (silent.has(target.name) ? null : (options.kernel ?? "Linux 6.1.0 x86_64")))
    }
  }
  const agent: HostAgent["Type"] = { for: on }
  return {
    agent,
    /** The target's memory service manager (its units, files, programs and the commands run there). */
    host,
    /** The host's channel stops (or starts again) answering. */
    setSilent: (target: string, isSilent: boolean) => void (isSilent ? silent.add(target) : silent.delete(target)),
    /** What a probe of `url` from `from` (`*`: any host) finds. */
    setEndpoint: (from: string, url: string, answer: EndpointProbe) => void endpoints.set(`${from} ${url}`, answer)
  }
}

export type MemoryHostAgent = ReturnType<typeof makeMemoryHostAgent>

export const MemoryHostAgent = (memory: MemoryHostAgent = makeMemoryHostAgent()) =>
  Layer.succeed(HostAgent, memory.agent)
