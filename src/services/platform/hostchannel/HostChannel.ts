import { Context, type Effect, Schema } from "effect"

export interface CommandRequest {
  /** The program and its arguments: never a shell string built from input. */
  readonly argv: ReadonlyArray<string>
  /** Bytes for the command's stdin: the only way a secret reaches a command. */
  readonly stdin?: Uint8Array | undefined
  /** A file on this host streamed to the command's stdin instead (never read into memory whole). */
  readonly stdinFile?: string | undefined
  readonly timeoutMs?: number | undefined
  /** Output kept per stream; beyond it the output is truncated (and says so). */
  readonly maxOutputBytes?: number | undefined
  /** Streams output as it arrives (for `ctl host exec`). */
  readonly onOutput?: ((stream: "stdout" | "stderr", chunk: Uint8Array) => void) | undefined
  /**
   * A local command runs as this user (setgid, setuid, no supplementary groups: the caller is root), with its
   * HOME, USER and LOGNAME and its home (or `/`) as working directory. Over ssh it does not apply: the command
   * runs as the target's ssh user on that host.
   */
  readonly runAs?: RunAs | undefined
}

export interface RunAs {
  readonly user: string
  readonly uid: number
  readonly gid: number
  readonly home: string
}

export interface CommandResult {
  /** The command's exit code; null when it was killed by a signal (timeout included). */
  readonly exitCode: number | null
  readonly signal: string | null
  readonly stdout: Uint8Array
  readonly stderr: Uint8Array
  readonly truncated: boolean
  readonly timedOut: boolean
  readonly elapsedMs: number
}

/** The channel itself failed (the program could not start, the identity could not be read). */
export class ChannelError extends Schema.TaggedError<ChannelError>()("ChannelError", {
  code: Schema.Literal("CHANNEL_ERROR"),
  target: Schema.String,
  detail: Schema.String
}) {}

/** How to reach one host, as the registry declares it. */
export type ChannelSpec =
  | { readonly kind: "local"; readonly target: string }
  | {
      readonly kind: "ssh"
      readonly target: string
      readonly host: string
      readonly port: number
      readonly user: string
      readonly identityItem: string
      readonly knownHosts: string
    }

/**
 * Runs a command on a host: `local` spawns it here, `ssh` through the OpenSSH client. Both take argv
 * (quoted for the remote shell by the adapter, never built by string concatenation from input).
 */
export class HostChannel extends Context.Tag("platform/HostChannel")<
  HostChannel,
  { readonly run: (spec: ChannelSpec, request: CommandRequest) => Effect.Effect<CommandResult, ChannelError> }
>() {}

/** POSIX shell single-quoting: the remote shell sees exactly these words. */
export const shellQuote = (word: string) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`)
