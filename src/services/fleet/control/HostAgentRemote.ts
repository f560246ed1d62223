import { Effect } from "effect"
import {
  BeaconOperation,
  type HereRefusal,
  HostUnreachable,
  ProbeOperation,
  type UnitChanged,
  UnitCommandFailed,
  UnitOperation,
  UnitPreflightRejected,
  type UnitShown,
  type UnitVerb
} from "../../../contracts/fleet/HostAgent.js"
import { HostChannel } from "../../platform/hostchannel/HostChannel.js"
import type { Ensured, HostAgentOn } from "../shared/HostAgent.js"
import { kernelThrough } from "../shared/HostReads.js"
import type { Target } from "../shared/registry/Schema.js"
import type { DeclaredUnit } from "../shared/units/ServiceManager.js"
import { type RemoteAnswerInvalid, RemoteCtl, type RemoteCtlFailed } from "./RemoteCtl.js"

/**
 * A refusal the host's `ctl` printed, as the caller's error: the unit errors keep their tag (the breaker counts
 * them), anything else (an unknown service there, a registry it cannot read) means nothing ran on the host.
 */
const refusalError = (target: Target, refusal: HereRefusal["error"], verb: string, unit: string) => {
  if (refusal._tag === "UnitCommandFailed")
    return new UnitCommandFailed({ unit, command: refusal.command ?? verb, detail: refusal.detail })
  if (refusal._tag === "UnitPreflightRejected") return new UnitPreflightRejected({ unit, detail: refusal.detail })
  return new HostUnreachable({ target: target.name, detail: refusal.detail })
}

type UnitDone = typeof UnitChanged.Type | typeof UnitShown.Type
const changed = (answer: UnitDone): answer is typeof UnitChanged.Type => "change" in answer

/** The channel failed, or the host answered what the protocol does not declare: the host could not be asked. */
const unreachable = (target: Target) => (error: RemoteCtlFailed | RemoteAnswerInvalid) =>
  new HostUnreachable({
    target: target.name,
    detail: error._tag === "RemoteAnswerInvalid" ? `${target.name} answered an unknown document` : error.detail
  })

/**
 * The host agent of another host: each operation is the target's own `ctl … --here --json` through its channel
 * (RemoteCtl.call: argv, never a shell string), its answer decoded with the operation's schema.
 */
export const makeRemoteHostAgent = Effect.gen(function* () {
  const remote = yield* RemoteCtl
  const channel = yield* HostChannel

  return (target: Target): HostAgentOn => {
    const unknown = (what: string) => new HostUnreachable({ target: target.name, detail: `${target.name} ${what}` })

    /** A unit verb on the host; a refusal it reports comes back as its typed error. */
    const unitVerb = (verb: UnitVerb, unit: string) =>
      Effect.gen(function* () {
        const { answer } = yield* remote
          .call(target, UnitOperation, { verb, service: unit, target: target.name })
          .pipe(Effect.mapError(unreachable(target)))
        if (!("ok" in answer)) return yield* unknown("answered an unknown document")
        if (!answer.ok) return yield* refusalError(target, answer.error, verb, unit)
        return answer
      })

    const change = (verb: "ensure" | "kick" | "reassert", unit: DeclaredUnit): Ensured =>
      Effect.flatMap(unitVerb(verb, unit.name), (answer) =>
        changed(answer)
          ? Effect.succeed({ change: answer.change, unit: answer.unit, state: answer.state })
          : unknown("answered no unit state")
      )

    return {
      inspect: (unit) =>
        unitVerb("show", unit.name).pipe(
          Effect.map((answer) => answer.state),
          // A read changes nothing on the host: any refusal of it means the host could not be asked.
          Effect.catchTags({
            UnitCommandFailed: (e) => new HostUnreachable({ target: target.name, detail: e.detail }),
            UnitPreflightRejected: (e) => new HostUnreachable({ target: target.name, detail: e.detail })
          })
        ),
      ensure: (definition) => change("ensure", definition),
      kick: (definition) => change("kick", definition),
      reassertTimer: (unit) => change("reassert", unit),
      probe: (url) =>
        Effect.gen(function* () {
          const { answer } = yield* remote
            .call(target, ProbeOperation, { url })
            .pipe(Effect.mapError(unreachable(target)))
          return "probe" in answer ? answer.probe : yield* unknown("answered an unknown document")
        }),
      beacon: Effect.gen(function* () {
        const reply = yield* remote.call(target, BeaconOperation, { target: target.name }).pipe(
          Effect.mapError((error) =>
            error._tag === "RemoteAnswerInvalid"
              ? new HostUnreachable({
                  target: target.name,
                  detail:
                    error.exitCode === 0
                      ? "the host's beacon does not validate"
                      : `${target.name} answered exit ${error.exitCode ?? "killed"}`
                })
              : new HostUnreachable({ target: target.name, detail: error.detail })
          )
        )
        if (reply.exitCode !== 0) return yield* unknown(`answered exit ${reply.exitCode ?? "killed"}`)
        return reply.answer
      }),
      kernel: kernelThrough(channel, remote.spec(target))
    }
  }
})
