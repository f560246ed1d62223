import { Effect, Schema } from "effect"
import type { HostCommand } from "../../../contracts/fleet/HostAgent.js"
import { HostChannel } from "../../platform/hostchannel/HostChannel.js"
import { channelSpec } from "../shared/Channels.js"
import { FleetConfig } from "../shared/FleetConfig.js"
import { FleetRegistry } from "../shared/registry/Registry.js"
import type { Target } from "../shared/registry/Schema.js"

export class RemoteCtlFailed extends Schema.TaggedError<RemoteCtlFailed>()("RemoteCtlFailed", {
  target: Schema.String,
  detail: Schema.String
}) {}

/** The host answered a document its operation does not declare (another version of `ctl`, or not `ctl` at all). */
export class RemoteAnswerInvalid extends Schema.TaggedError<RemoteAnswerInvalid>()("RemoteAnswerInvalid", {
  target: Schema.String,
  operation: Schema.String,
  /** The command's exit code beside the answer (null when it was killed). */
  exitCode: Schema.NullOr(Schema.Number),
  detail: Schema.String
}) {}

export interface RemoteAnswer<A> {
  /** The remote command's exit code (null when it was killed). */
  readonly exitCode: number | null
  /** Its standard output, decoded with the operation's answer schema. */
  readonly answer: A
}

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes).trim()

/**
 * `ctl` on another host of the fleet: the target's declared host channel runs `KEEL_REMOTE_CTL …args`
 * there and its JSON answer comes back, so what a command reads or changes on a host is read or changed
 * by the `ctl` of that host. Used by `ctl host health|inventory` (the beacon collected on the host) and
 * `ctl space` for another target (its janitor runs there).
 */
export class RemoteCtl extends Effect.Service<RemoteCtl>()("fleet/RemoteCtl", {
  effect: Effect.gen(function* () {
    const registry = yield* FleetRegistry
    const channel = yield* HostChannel
    const { knownHosts, remoteCtl: ctl } = yield* FleetConfig

    /** The registry target named `name` (the current registry, or its last valid snapshot). */
    const target = (name: string) =>
      Effect.gen(function* () {
        const snapshot = yield* registry
          .read({ allowCached: true })
          .pipe(Effect.mapError((error) => new RemoteCtlFailed({ target: name, detail: error.detail })))
        const found = snapshot.registry.targets.find((t) => t.name === name)
        if (found === undefined) {
          return yield* new RemoteCtlFailed({ target: name, detail: `${name} is not a target of the registry` })
        }
        return found
      })

    /** How `target` is reached, with the fleet's known_hosts where the target names none. */
    const spec = (target: Target) => channelSpec(target, knownHosts)

    /**
     * Runs `ctl …args` on the target (through `sudo -n` with `sudo`); an empty or non-JSON answer is a failure that
     * quotes its stderr.
     */
    const runParsed = (
      target: Target,
      args: ReadonlyArray<string>,
      timeoutMs: number,
      options: { readonly sudo?: boolean } = {}
    ) =>
      Effect.gen(function* () {
        const result = yield* channel
          .run(spec(target), { argv: [...(options.sudo ? ["sudo", "-n"] : []), ...ctl, ...args], timeoutMs })
          .pipe(Effect.mapError((error) => new RemoteCtlFailed({ target: target.name, detail: error.detail })))
        const answer = text(result.stdout)
        const failed = (why: string) =>
          new RemoteCtlFailed({
            target: target.name,
            detail: `${target.name} ${why} (exit ${result.exitCode ?? "killed"}): ${text(result.stderr)}`
          })
        if (result.timedOut) return yield* failed(`did not answer within ${timeoutMs / 1000} s`)
        if (answer === "") return yield* failed("answered nothing")
        const json = yield* Effect.try({
          try: () => JSON.parse(answer) as unknown,
          catch: () => failed("answered no JSON")
        })
        return { exitCode: result.exitCode, json }
      })

    /**
     * One operation of the host protocol (src/contracts/fleet/HostAgent.ts) on the target: its command line run by
     * the target's `ctl`, its answer decoded with the operation's schema — the one place a host's answer is read.
     */
    const call = <P, A, I>(
      target: Target,
      command: HostCommand<P, A, I>,
      payload: P,
      options: { readonly sudo?: boolean } = {}
    ): Effect.Effect<RemoteAnswer<A>, RemoteCtlFailed | RemoteAnswerInvalid> =>
      Effect.gen(function* () {
        const reply = yield* runParsed(target, command.argv(payload), command.timeoutMs(payload), options)
        const answer = yield* Schema.decodeUnknown(command.answer)(reply.json).pipe(
          Effect.mapError(
            (error) =>
              new RemoteAnswerInvalid({
                target: target.name,
                operation: command.operation,
                exitCode: reply.exitCode,
                detail: `${target.name} answered an unknown document to ${command.operation}: ${error.message.split("\n")[0]}`
              })
          )
        )
        return { exitCode: reply.exitCode, answer }
      })

    return { target, spec, call, ctl } as const
  }),
  dependencies: [FleetConfig.Default]
}) {}
