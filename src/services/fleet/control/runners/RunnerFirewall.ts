/**
 * The pre-check runner's uid firewall (seed 002, pre-check runner rule 3; docs/runners.md): what a job running as
 * the runner's uid may not reach — loopback, RFC 1918, link-local, unique-local and CGNAT/overlay ranges, IPv4 and
 * IPv6 — with exactly one exception, the loopback gateway port. Public endpoints stay reachable. Pure renderings:
 * the nftables table (Linux) and the PF anchor (macOS) are functions of the uid and the gateway port only.
 */

export interface FirewallRule {
  /** The runner account's uid: every rule matches only its sockets. */
  readonly uid: number
  /** The loopback port of the gateway, the one private destination the runner may reach. */
  readonly gatewayPort: number
}

/** Private, local and overlay ranges the runner's jobs may not reach (rule 3). */
export const BLOCKED_V4 = [
  "127.0.0.0/8", // loopback
  "10.0.0.0/8", // RFC 1918
  "172.16.0.0/12", // RFC 1918
  "192.168.0.0/16", // RFC 1918
  "169.254.0.0/16", // link-local
  "100.64.0.0/10" // CGNAT, and overlay networks (Tailscale) that live there
] as const

export const BLOCKED_V6 = [
  "::1/128", // loopback
  "fc00::/7", // unique-local
  "fe80::/10" // link-local
] as const

const check = (rule: FirewallRule) => {
  if (!Number.isInteger(rule.uid) || rule.uid < 1 || rule.uid > 4_294_967_294)
    throw new RangeError(`uid ${rule.uid} is not a non-root account's uid`)
  if (!Number.isInteger(rule.gatewayPort) || rule.gatewayPort < 1 || rule.gatewayPort > 65_535)
    throw new RangeError(`gateway port ${rule.gatewayPort} is not a TCP port`)
}

/** The nftables table name of a runner uid: one table per uid, replaced atomically as a whole. */
export const nftTableName = (uid: number) => `keel_runner_${uid}`

/**
 * The runner's nftables table (`nft -f`): an `inet` table with one output chain, the gateway exception first, then
 * rejects (a refused connection fails fast, never hangs) for the host's own addresses and the blocked ranges — all
 * matched on a positive `meta skuid` (a negated match would also catch the kernel's socket-less resets).
 * The leading `add` + `delete` make loading it replace a previous version atomically in one transaction.
 */
export const renderNftTable = (rule: FirewallRule) => {
  check(rule)
  const table = nftTableName(rule.uid)
  const uid = `meta skuid ${rule.uid}`
  return [
    `# Keel pre-check runner firewall for uid ${rule.uid} (docs/runners.md); generated, do not edit.`,
    `add table inet ${table}`,
    `delete table inet ${table}`,
    `table inet ${table} {`,
    "  chain output {",
    "    type filter hook output priority 0; policy accept;",
    `    ${uid} ip daddr 127.0.0.1 tcp dport ${rule.gatewayPort} accept`,
    `    ${uid} ip6 daddr ::1 tcp dport ${rule.gatewayPort} accept`,
    // The host's own addresses, public ones included: a service bound to 0.0.0.0 is local, whatever its address.
    `    ${uid} fib daddr type local reject`,
    `    ${uid} ip daddr { ${BLOCKED_V4.join(", ")} } reject`,
    `    ${uid} ip6 daddr { ${BLOCKED_V6.join(", ")} } reject`,
    "  }",
    "}",
    ""
  ].join("\n")
}

/** The PF anchor name of a runner uid, under Apple's `com.apple/` anchor (loaded by the system's pf.conf). */
export const pfAnchorName = (uid: number) => `com.apple/keel-runner-${uid}`

/**
 * The runner's PF anchor (macOS, `pfctl -a <anchor> -f -`): `quick` rules, the gateway exception first, then
 * `block return` (an immediate refusal) to the blocked ranges, each for the runner's uid only.
 */
export const renderPfAnchor = (rule: FirewallRule) => {
  check(rule)
  return [
    `# Keel pre-check runner firewall for uid ${rule.uid} (docs/runners.md); generated, do not edit.`,
    `pass out quick proto tcp from any to 127.0.0.1 port ${rule.gatewayPort} user ${rule.uid}`,
    `pass out quick inet6 proto tcp from any to ::1 port ${rule.gatewayPort} user ${rule.uid}`,
    `block return out quick from any to self user ${rule.uid}`,
    `block return out quick inet from any to { ${BLOCKED_V4.join(", ")} } user ${rule.uid}`,
    `block return out quick inet6 from any to { ${BLOCKED_V6.join(", ")} } user ${rule.uid}`,
    ""
  ].join("\n")
}
