import * as path from "node:path"
import { Config, Effect, Option } from "effect"
import { AppConfig } from "../platform/AppConfig.js"
import type { ChannelSpec } from "../platform/hostchannel/HostChannel.js"
import type { Target } from "./registry/Schema.js"

/** How to reach a registry target: its declared channel, with the fleet's known_hosts by default. */
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

/** The fleet's known_hosts for ssh targets that name none: KEEL_SSH_KNOWN_HOSTS, or `<data dir>/known_hosts`. */
export const defaultKnownHosts = Effect.gen(function* () {
  const app = yield* AppConfig
  const configured = yield* Config.option(Config.string("KEEL_SSH_KNOWN_HOSTS")).pipe(Effect.orDie)
  return Option.getOrElse(configured, () => path.join(app.dataDir, "known_hosts"))
})
