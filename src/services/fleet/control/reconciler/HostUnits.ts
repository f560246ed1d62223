import { Context, Effect, Layer } from "effect"
import type { UnitState } from "../../../../contracts/fleet/Beacon.js"
import { type EndpointProbe, HostUnreachable } from "../../../../contracts/fleet/HostAgent.js"
import { type Ensured, HostAgent } from "../../shared/HostAgent.js"
import type { Target } from "../../shared/registry/Schema.js"
import { makeMemoryServiceManager } from "../../shared/units/MemoryServiceManager.js"
import type { DeclaredUnit } from "../../shared/units/ServiceManager.js"
import type { UnitDefinition } from "../../shared/units/UnitRender.js"

/**
 * A target's units as the reconciler reaches them, through the target's host agent (`HostAgent.for(target)`: this
 * host's service manager on a `local` target, the host's `ctl service … --here --json` elsewhere). `probe` asks
 * whether an endpoint answers, from a consumer host.
 */
export class HostUnits extends Context.Tag("fleet/HostUnits")<
  HostUnits,
  {
    readonly inspect: (target: Target, unit: DeclaredUnit) => Effect.Effect<UnitState, HostUnreachable>
    readonly ensure: (target: Target, definition: UnitDefinition) => Ensured
    readonly kick: (target: Target, definition: UnitDefinition) => Ensured
    readonly reassertTimer: (target: Target, unit: DeclaredUnit) => Ensured
    readonly probe: (from: Target, url: string) => Effect.Effect<EndpointProbe, HostUnreachable>
  }
>() {}

export const HostUnitsLive = Layer.effect(
  HostUnits,
  Effect.map(HostAgent, (agent) => ({
    inspect: (target, unit) => agent.for(target).inspect(unit),
    ensure: (target, definition) => agent.for(target).ensure(definition),
    kick: (target, definition) => agent.for(target).kick(definition),
    reassertTimer: (target, unit) => agent.for(target).reassertTimer(unit),
    probe: (from, url) => agent.for(from).probe(url)
  }))
)

/**
 * Every target's units in memory (one memory service manager per target, created on first use), hosts
 * whose channel does not answer, and endpoint answers per `from → url`: the reconciler's tests.
 */
export const makeMemoryHostUnits = () => {
  const hosts = new Map<string, ReturnType<typeof makeMemoryServiceManager>>()
  const silent = new Set<string>()
  const endpoints = new Map<string, EndpointProbe | "channel_fails">()
  /** Every host-changing command, prefixed by its target: "forge-1: restart keel-api.service". */
  const commands: Array<string> = []
  const host = (name: string) => {
    let found = hosts.get(name)
    if (found === undefined) {
      found = makeMemoryServiceManager()
      hosts.set(name, found)
    }
    return found
  }
  const reach = <A, E>(
    target: Target,
    run: (memory: ReturnType<typeof makeMemoryServiceManager>) => Effect.Effect<A, E>
  ) =>
    silent.has(target.name)
      ? Effect.fail(new HostUnreachable({ target: target.name, detail: `${target.name} does not answer` }))
      : Effect.suspend(() => {
          const memory = host(target.name)
          const before = memory.commands.length
          return run(memory).pipe(
            Effect.ensuring(
              Effect.sync(() => {
                for (const command of memory.commands.slice(before)) commands.push(`${target.name}: ${command}`)
              })
            )
          )
        })
  const units: HostUnits["Type"] = {
    inspect: (target, unit) => reach(target, (m) => m.manager.inspect(unit)),
    ensure: (target, definition) => reach(target, (m) => m.manager.ensure(definition)),
    kick: (target, definition) => reach(target, (m) => m.manager.kick(definition)),
    reassertTimer: (target, unit) => reach(target, (m) => m.manager.reassertTimer(unit)),
    probe: (from, url) => {
      const answer = endpoints.get(`${from.name} ${url}`) ?? endpoints.get(`* ${url}`) ?? "unreachable"
      return silent.has(from.name) || answer === "channel_fails"
        ? Effect.fail(new HostUnreachable({ target: from.name, detail: `${from.name} does not answer` }))
        : Effect.succeed(answer)
    }
  }
  return {
    units,
    host,
    commands: commands as ReadonlyArray<string>,
    /** The host's channel stops (or starts again) answering. */
    setSilent: (target: string, isSilent: boolean) => void (isSilent ? silent.add(target) : silent.delete(target)),
    /** What a probe of `url` from `from` (`*`: any consumer) finds. */
    setEndpoint: (from: string, url: string, answer: EndpointProbe | "channel_fails") =>
      void endpoints.set(`${from} ${url}`, answer)
  }
}

export type MemoryHostUnits = ReturnType<typeof makeMemoryHostUnits>

export const MemoryHostUnits = (memory: MemoryHostUnits = makeMemoryHostUnits()) =>
  Layer.succeed(HostUnits, memory.units)
