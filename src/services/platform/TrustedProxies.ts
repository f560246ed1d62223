import { BlockList, isIP } from "node:net"
import { Config, ConfigError, Effect } from "effect"

/** `::ffff:10.0.0.1` → `10.0.0.1`; brackets and a zone or port are not part of an address here. */
const normalize = (address: string) => {
  const bare = address.trim().replace(/^\[|\]$/g, "")
  return bare.toLowerCase().startsWith("::ffff:") && isIP(bare.slice(7)) === 4 ? bare.slice(7) : bare
}

/** The client address when none can be trusted: never loopback, never a real address. */
const UNKNOWN = "unknown"

/** `for=` values of a `Forwarded` header (RFC 7239), in order; quotes, brackets and ports removed. */
const forwardedFor = (header: string) =>
  header
    .split(",")
    .map((element) => /(?:^|;)\s*for=("?)([^";,]+)\1/i.exec(element)?.[2])
    .filter((value): value is string => value !== undefined)
    .map((value) => {
      const unbracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(value)?.[1]
      if (unbracketed !== undefined) return unbracketed
      return isIP(value) === 0 && /^[\d.]+:\d+$/.test(value) ? value.slice(0, value.lastIndexOf(":")) : value
    })

/**
 * The client's address as Keel uses it (rate-limit keys, the ground-truth loopback rule): the socket's
 * peer, unless that peer is one of `KEEL_TRUSTED_PROXIES` (CIDRs, comma-separated; default none). Then the
 * `Forwarded` (RFC 7239) or else `X-Forwarded-For` chain is read from the right, skipping trusted proxies;
 * the first address that is not one is the client. A header from an untrusted peer is ignored: anyone can
 * write it. Fail closed: a hop that is not an address, or both headers naming different clients, is `unknown`.
 */
export class TrustedProxies extends Effect.Service<TrustedProxies>()("platform/TrustedProxies", {
  effect: Effect.gen(function* () {
    const setting = yield* Config.string("KEEL_TRUSTED_PROXIES").pipe(Config.withDefault(""))
    const trusted = new BlockList()
    const cidrs: Array<string> = []
    for (const entry of setting
      .split(",")
      .map((e) => e.trim())
      .filter((e) => e.length > 0)) {
      const [address = "", prefix] = entry.split("/")
      const family = isIP(normalize(address))
      if (family === 0)
        return yield* Effect.fail(
          ConfigError.InvalidData(["KEEL_TRUSTED_PROXIES"], `${entry} is not an address or CIDR`)
        )
      const bits = prefix === undefined ? (family === 4 ? 32 : 128) : Number(prefix)
      if (!Number.isInteger(bits) || bits < 0 || bits > (family === 4 ? 32 : 128))
        return yield* Effect.fail(ConfigError.InvalidData(["KEEL_TRUSTED_PROXIES"], `${entry} has a bad prefix length`))
      trusted.addSubnet(normalize(address), bits, family === 4 ? "ipv4" : "ipv6")
      cidrs.push(entry)
    }
    const isTrusted = (address: string) => {
      const bare = normalize(address)
      const family = isIP(bare)
      return family !== 0 && trusted.check(bare, family === 4 ? "ipv4" : "ipv6")
    }

    /** The client a chain names, read from the right past trusted proxies; `unknown` at anything not an address. */
    const clientOf = (chain: ReadonlyArray<string>, socket: string) => {
      for (let i = chain.length - 1; i >= 0; i--) {
        const hop = normalize(chain[i]!)
        // Garbage, `unknown` or an obfuscated name (`_hidden`): no address past it can be trusted, and the
        // proxy's own address would pass for the client (a loopback one, for the ground-truth rule).
        if (isIP(hop) === 0) return UNKNOWN
        if (!isTrusted(hop)) return hop
      }
      return chain.length > 0 ? normalize(chain[0]!) : socket
    }

    const clientAddress = (peer: string | undefined, headers: Readonly<Record<string, string | undefined>>) => {
      const socket = peer === undefined ? UNKNOWN : normalize(peer)
      if (cidrs.length === 0 || !isTrusted(socket)) return socket
      const xff = headers["x-forwarded-for"]
      const fromXff =
        xff === undefined
          ? undefined
          : clientOf(
              xff
                .split(",")
                .map((a) => a.trim())
                .filter((a) => a.length > 0),
              socket
            )
      if (headers.forwarded === undefined) return fromXff ?? socket
      const fromForwarded = clientOf(forwardedFor(headers.forwarded), socket)
      // Both, naming different clients: one of them came from the client through a proxy that writes only the
      // other, and nothing says which. Neither is trusted.
      return fromXff !== undefined && fromXff !== fromForwarded ? UNKNOWN : fromForwarded
    }

    return { clientAddress, trusted: cidrs } as const
  })
}) {}
