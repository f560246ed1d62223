/** Whether a host name or address is loopback: all of 127.0.0.0/8, ::1 (also IPv4-mapped), localhost. */
export const isLoopbackHost = (host: string): boolean => {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host
  const lower = bare.toLowerCase()
  const v4 = lower.startsWith("::ffff:") ? lower.slice("::ffff:".length) : lower
  // The URL parser writes an IPv4-mapped address in hex (`[::ffff:127.0.0.1]` is `[::ffff:7f00:1]`).
  const mappedHex = /^::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}$/.test(lower)
  return lower === "::1" || lower === "localhost" || mappedHex || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4)
}

/** `scheme://host:port` with the port always written (`http://127.0.0.1` is `http://127.0.0.1:80`). */
export const originWithPort = (url: URL): string =>
  `${url.protocol}//${url.hostname}:${url.port !== "" ? url.port : url.protocol === "https:" ? "443" : "80"}`

/**
 * Why a `fetch` to `url` failed, in one line naming the server with its port and the system's reason: undici
 * says only "fetch failed" and keeps the reason (`connect ECONNREFUSED 127.0.0.1:80`) in its cause.
 */
export const unreachable = (url: URL, error: unknown): string => {
  const own = error instanceof Error ? error : new Error(String(error))
  const cause = (own as { cause?: { message?: unknown } }).cause?.message
  const why =
    own.name === "TimeoutError"
      ? "no answer in time"
      : typeof cause === "string" && cause !== ""
        ? `${cause}; ${own.message}`
        : own.message
  return `cannot reach ${originWithPort(url)} (${why})`
}
