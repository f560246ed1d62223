import { isIP } from "node:net"
import { Config, ConfigError, Effect } from "effect"
import { isLoopbackHost } from "./Net.js"
import { TrustedProxies } from "./TrustedProxies.js"

/** `[::1]:8080` → `::1`, `LocalHost.:80` → `localhost`; undefined for what no client would send as a Host. */
export const hostOfHeader = (header: string): string | undefined => {
  const value = header.trim().toLowerCase()
  const bracketed = /^\[([0-9a-f:.]+)\](?::\d{1,5})?$/.exec(value)
  if (bracketed !== null) return bracketed[1]
  const named = /^([^:[\]\s/@]+)(?::\d{1,5})?$/.exec(value)
  if (named === null) return undefined
  const name = named[1]!
  return name.endsWith(".") ? name.slice(0, -1) : name
}

/**
 * The authority a request asks for: an absolute-form target's (`GET http://name/ HTTP/1.1`, whose authority RFC 9112
 * §3.2.2 says a server uses instead of `Host`, and which Node routes like its path), else the `Host` header.
 */
export const requestedAuthority = (target: string, host: string | undefined): string | undefined =>
  /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(target)?.[1] ?? host

/** A name of `KEEL_SERVER_NAMES` as `hostOfHeader` reads it; undefined for a port, a scheme, anything else. */
const serverName = (entry: string): string | undefined => {
  const bare = entry
    .toLowerCase()
    .replace(/^\[(.*)\]$/, "$1")
    .replace(/\.$/, "")
  const label = "[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?"
  return isIP(bare) !== 0 || new RegExp(`^${label}(\\.${label})*$`).test(bare) ? bare : undefined
}

/** Why a request a surface would trust for coming from this machine is refused. */
export type LoopbackRefusal = "not-loopback" | "host-not-allowed"

/**
 * The rule of a surface that trusts clients on this machine (the ground truth without `GT_TOKENS`): the client
 * (the socket's peer, or the client a trusted proxy names) must be loopback, and the `Host` it asked for must be a
 * loopback name or address (`localhost`, any `127.x.y.z`, `::1`, any port) or one of `KEEL_SERVER_NAMES` (the
 * authority of an absolute-form request target counts instead, as HTTP says: `requestedAuthority`). The
 * second half stops DNS rebinding: a web page in a browser on this machine can make its own host name resolve to
 * 127.0.0.1 and so reach the server from the loopback address, but its requests still say that name in `Host`.
 * A request with no `Host` at all (HTTP/1.0) comes from no browser and is admitted.
 */
export class LoopbackTrust extends Effect.Service<LoopbackTrust>()("platform/LoopbackTrust", {
  effect: Effect.gen(function* () {
    const proxies = yield* TrustedProxies
    const setting = yield* Config.string("KEEL_SERVER_NAMES").pipe(Config.withDefault(""))
    const serverNames = new Set<string>()
    for (const entry of setting
      .split(",")
      .map((e) => e.trim())
      .filter((e) => e.length > 0)) {
      const name = serverName(entry)
      if (name === undefined)
        return yield* Effect.fail(
          ConfigError.InvalidData(
            ["KEEL_SERVER_NAMES"],
            `${JSON.stringify(entry)} is not a host name or address (no scheme, no port)`
          )
        )
      serverNames.add(name)
    }

    const allowedHost = (header: string | undefined) => {
      if (header === undefined) return true
      const host = hostOfHeader(header)
      return host !== undefined && (isLoopbackHost(host) || serverNames.has(host))
    }

    /** `target` is the request target as sent (Node's `url`: a path, or an absolute URL). */
    const refusal = (
      peer: string | undefined,
      headers: Readonly<Record<string, string | undefined>>,
      target: string
    ): LoopbackRefusal | undefined => {
      if (!isLoopbackHost(proxies.clientAddress(peer, headers))) return "not-loopback"
      if (!allowedHost(requestedAuthority(target, headers.host))) return "host-not-allowed"
      return undefined
    }

    return { refusal, serverNames: [...serverNames] } as const
  }),
  dependencies: [TrustedProxies.Default]
}) {}
