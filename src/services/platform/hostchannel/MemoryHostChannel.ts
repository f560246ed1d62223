import { Effect, Layer } from "effect"
import {
  type ChannelError,
  type ChannelSpec,
  type CommandRequest,
  type CommandResult,
  HostChannel
} from "./HostChannel.js"

/** What a memory channel answers one command: part of a result (the rest is a quick, empty exit 0), or an effect. */
export type MemoryAnswer = (
  spec: ChannelSpec,
  request: CommandRequest
) => Partial<CommandResult> | Effect.Effect<Partial<CommandResult>, ChannelError>

const text = (value: string) => new TextEncoder().encode(value)

/**
 * A host channel in memory for tests: every command is answered by `answer` (by default an empty exit 0) and
 * recorded with where it was sent, so a test asserts what would have run on which host without a process or ssh.
 */
export const makeMemoryHostChannel = (answer: MemoryAnswer = () => ({})) => {
  const calls: Array<{
    readonly spec: ChannelSpec
    readonly argv: ReadonlyArray<string>
    readonly timeoutMs: number | undefined
  }> = []
  const channel: HostChannel["Type"] = {
    run: (spec, request) =>
      Effect.suspend(() => {
        calls.push({ spec, argv: request.argv, timeoutMs: request.timeoutMs })
        const given = answer(spec, request)
        return Effect.map(Effect.isEffect(given) ? given : Effect.succeed(given), (part) => ({
          exitCode: 0,
          signal: null,
          stdout: text(""),
          stderr: text(""),
          truncated: false,
          timedOut: false,
          elapsedMs: 1,
          ...part
        }))
      })
  }
  return { channel, calls: calls as ReadonlyArray<(typeof calls)[number]> }
}

export type MemoryHostChannel = ReturnType<typeof makeMemoryHostChannel>

export const MemoryHostChannel = (memory: MemoryHostChannel = makeMemoryHostChannel()) =>
  Layer.succeed(HostChannel, memory.channel)
