import { Duration, Effect } from "effect"
import type { ChannelSpec, HostChannel } from "../../platform/hostchannel/HostChannel.js"
import { unameThrough } from "../../platform/hostchannel/Uname.js"

// What both carriers of the HostAgent port read the same way (HostAgentLocal for this host, HostAgentRemote through
// a target's channel, the reconciler's evidence budget): below both, so the control plane need not import the agent.

/** How long an endpoint probe may take (the sweep's per-probe budget, like a gates read). */
export const PROBE_BUDGET = Duration.seconds(5)

/** The host's kernel (`uname -srm` through its channel), or null when it could not be read. */
export const kernelThrough = (channel: HostChannel["Type"], spec: ChannelSpec) =>
  unameThrough(channel, spec, "-srm").pipe(Effect.orElseSucceed(() => null))
