import type { ChannelSpec } from "../../platform/hostchannel/HostChannel.js"
import type { Target } from "./registry/Schema.js"

/** How to reach a registry target: its declared channel, with the fleet's known_hosts (FleetConfig) by default. */
export const channelSpec = (target: Target, defaultKnownHosts: string): ChannelSpec =>
  target.channel === "local"
    ? { kind: "local", target: target.name }
    : {
        kind: "ssh",
        target: target.name,
        host: target.channel.ssh.host,
        port: target.channel.ssh.port,
        user: target.channel.ssh.user,
        identityItem: target.channel.ssh.identity_item,
        knownHosts: target.channel.ssh.known_hosts ?? defaultKnownHosts
      }
