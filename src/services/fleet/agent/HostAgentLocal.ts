import { Duration, Effect } from "effect"
import type { EndpointProbe } from "../../../contracts/fleet/HostAgent.js"
import { HostChannel } from "../../platform/hostchannel/HostChannel.js"
import type { HostAgentOn } from "../shared/HostAgent.js"
import { kernelThrough, PROBE_BUDGET } from "../shared/HostReads.js"
import type { Target } from "../shared/registry/Schema.js"
import { ServiceManager } from "../shared/units/ServiceManager.js"
import { collectBeacon } from "./beacon/BeaconWriter.js"

/** Whether `url` answers HTTP at all (any status is an observation); refused, timed out or unresolvable is not. */
export const probeUrl = (url: string, budget: Duration.DurationInput = PROBE_BUDGET) =>
  Effect.promise(async (): Promise<EndpointProbe> => {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(Duration.toMillis(budget)), redirect: "manual" })
      await response.body?.cancel()
      return "observed"
    } catch {
      return "unreachable"
    }
  })

/**
 * The host agent of this host: its own service manager, probes and beacon writer, in-process — what the host's
 * `ctl … --here` runs when the control plane asks it through its channel.
 */
export const makeLocalHostAgent = Effect.gen(function* () {
  const manager = yield* ServiceManager
  const channel = yield* HostChannel
  return (target: Target): HostAgentOn => ({
    inspect: (unit) => manager.inspect(unit),
    ensure: (definition) => manager.ensure(definition),
    kick: (definition) => manager.kick(definition),
    reassertTimer: (unit) => manager.reassertTimer(unit),
    probe: (url) => probeUrl(url),
    beacon: collectBeacon(target).pipe(Effect.provideService(ServiceManager, manager)),
    kernel: kernelThrough(channel, { kind: "local", target: target.name })
  })
})
