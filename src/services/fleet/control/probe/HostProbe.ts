import { randomBytes } from "node:crypto"
import { Effect } from "effect"
import { ProbeFailed, type ProbeResult } from "../../../../contracts/fleet/Probe.js"
import { HostChannel } from "../../../platform/hostchannel/HostChannel.js"
import { unameThrough } from "../../../platform/hostchannel/Uname.js"
import { ObjectGateway } from "../../../platform/objects/ObjectGateway.js"
import { channelSpec } from "../../shared/Channels.js"
import { FleetConfig } from "../../shared/FleetConfig.js"
import { FleetRegistry } from "../../shared/registry/Registry.js"
import type { Target } from "../../shared/registry/Schema.js"

export const probeKey = (executionId: string, name: string) => `state/probes/${executionId}/${name}`

const probeFailed = (step: "registry" | "reach" | "report", detail: string) =>
  new ProbeFailed({ code: "PROBE_FAILED", step, detail })

/**
 * The steps of a host probe (the `FleetProbe` workflow sequences them, one activity each): the registry's
 * declaration of the host, the host's kernel read through its channel, the report stored. Each step leaves a
 * witness object per time it ran (`state/probes/<execution>/<n>-<step>.<nonce>.json`).
 */
export class HostProbe extends Effect.Service<HostProbe>()("fleet/HostProbe", {
  effect: Effect.gen(function* () {
    const registry = yield* FleetRegistry
    const objects = yield* ObjectGateway
    const channel = yield* HostChannel
    const { knownHosts } = yield* FleetConfig

    /** The step's witness: a fresh object each time the step's body runs. */
    const witness = (executionId: string, step: string, value: unknown) =>
      objects
        .putJson(probeKey(executionId, `${step}.${randomBytes(6).toString("hex")}.json`), {
          pid: process.pid,
          at: new Date().toISOString(),
          value
        })
        .pipe(Effect.orDie)

    /** `uname <flags>` on a registry target through its channel: its output, or why it could not be read. */
    const uname = (target: Target, flags: "-sr" | "-srm") =>
      unameThrough(channel, channelSpec(target, knownHosts), flags)

    /** Step 1: the host is a target of the registry; the registry's digest. */
    const declared = (executionId: string, host: string) =>
      Effect.gen(function* () {
        const snapshot = yield* registry
          .read({ allowCached: true })
          .pipe(Effect.mapError((e) => probeFailed("registry", e.detail)))
        if (!snapshot.registry.targets.some((t) => t.name === host))
          return yield* probeFailed("registry", `${host} is not a target of the registry`)
        yield* witness(executionId, "1-registry", { digest: snapshot.digest })
        return { digest: snapshot.digest }
      })

    /** Step 2: the host's kernel (`uname -sr`), read through its channel. */
    const reach = (executionId: string, host: string) =>
      Effect.gen(function* () {
        const snapshot = yield* registry.read({ allowCached: true }).pipe(Effect.orDie)
        const target = snapshot.registry.targets.find((t) => t.name === host)
        if (target === undefined) return yield* probeFailed("reach", `${host} left the registry`)
        const kernel = yield* uname(target, "-sr").pipe(Effect.mapError((e) => probeFailed("reach", e.detail)))
        yield* witness(executionId, "2-reach", { kernel })
        return { kernel }
      })

    /** Step 3: the report, stored at `state/probes/<execution>/report.json`. */
    const report = (executionId: string, result: Omit<typeof ProbeResult.Type, "report_key">) =>
      Effect.gen(function* () {
        const reportKey = probeKey(executionId, "report.json")
        yield* objects.putJson(reportKey, result).pipe(Effect.orDie)
        yield* witness(executionId, "3-report", { key: reportKey })
        return { ...result, report_key: reportKey }
      })

    return { uname, declared, reach, report } as const
  })
}) {}
