/** Whether a host name or address is loopback: all of 127.0.0.0/8, ::1 (also IPv4-mapped), localhost. */
export const isLoopbackHost = (host: string): boolean => {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host
  const v4 = bare.startsWith("::ffff:") ? bare.slice("::ffff:".length) : bare
  return bare === "::1" || bare.toLowerCase() === "localhost" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4)
}
