import { Effect } from "effect"
import type { ChannelSpec, HostChannel } from "./HostChannel.js"

/**
 * `uname <flags>` on a host through its channel: its output, or why it could not be read. The one kernel probe: the
 * control plane's FleetProbe (`-sr`) and a host's inventory (`-srm`) both read it so.
 */
export const unameThrough = (channel: HostChannel["Type"], spec: ChannelSpec, flags: "-sr" | "-srm") =>
  Effect.gen(function* () {
    const result = yield* channel
      .run(spec, { argv: ["uname", flags], timeoutMs: 30_000 })
      .pipe(Effect.mapError((e) => ({ detail: e.detail })))
    if (result.exitCode !== 0)
      return yield* Effect.fail({ detail: `uname exited ${result.exitCode ?? result.signal} on ${spec.target}` })
    return new TextDecoder().decode(result.stdout).trim()
  })
