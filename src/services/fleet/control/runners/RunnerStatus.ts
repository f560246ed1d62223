import { type RunnerLayout, runnerOwned } from "../../shared/runners/RunnerLayout.js"

/**
 * What `status` (and the end of `install`) makes of the host's answers — pure, so each rule of the layout is a
 * tested line: the runner-owned directories are the account's, everything else under the root is root's and not
 * writable by the account, the secret is the account's and 0600, the published files say what they should, and the
 * firewall table read back holds the rules rendered for this uid and gateway port.
 */

interface Stat {
  readonly uid: number
  readonly gid: number
  readonly mode: number
  readonly type: string
}

/** `stat` values as the status script prints them: `<uid> <gid> <octal mode> <type>|<path>` or `missing|<path>`. */
export const parseStats = (lines: ReadonlyArray<string>) => {
  const stats = new Map<string, Stat | null>()
  for (const line of lines) {
    const bar = line.indexOf("|")
    const head = line.slice(0, bar)
    const file = line.slice(bar + 1)
    if (head === "missing") stats.set(file, null)
    else {
      const [uid, gid, mode, ...type] = head.split(" ")
      stats.set(file, {
        uid: Number(uid),
        gid: Number(gid),
        mode: Number.parseInt(mode ?? "0", 8),
        type: type.join(" ")
      })
    }
  }
  return stats
}

const octal = (mode: number) => mode.toString(8).padStart(4, "0")

export const layoutDeviations = (
  layout: RunnerLayout,
  account: { readonly uid: number; readonly gid: number } | null,
  stats: ReadonlyMap<string, Stat | null>,
  writable: ReadonlyArray<string>
): ReadonlyArray<string> => {
  if (account === null) return [`the account ${layout.account} does not exist`]
  const problems: Array<string> = []
  const expect = (file: string, rule: { owner: "root" | "runner"; mode?: number; type?: string }) => {
    const stat = stats.get(file)
    if (stat === undefined) return
    if (stat === null) return problems.push(`${file} is missing`)
    const owner = rule.owner === "root" ? 0 : account.uid
    if (stat.uid !== owner) problems.push(`${file} is owned by uid ${stat.uid}, not ${rule.owner} (${owner})`)
    if (rule.type !== undefined && stat.type !== rule.type)
      problems.push(`${file} is a ${stat.type}, not a ${rule.type}`)
    if (rule.mode !== undefined && stat.mode !== rule.mode)
      problems.push(`${file} has mode ${octal(stat.mode)}, not ${octal(rule.mode)}`)
    if (rule.owner === "root" && (stat.mode & 0o002 || (stat.mode & 0o020 && stat.gid === account.gid)))
      problems.push(`${file} is writable by the runner account (mode ${octal(stat.mode)})`)
  }
  for (const dir of [layout.root, layout.app, layout.hooks]) expect(dir, { owner: "root", type: "directory" })
  for (const dir of runnerOwned(layout)) expect(dir, { owner: "runner", type: "directory" })
  for (const hook of [layout.jobStarted, layout.jobCompleted]) expect(hook, { owner: "root", mode: 0o755 })
  for (const file of layout.stateFiles) expect(file, { owner: "runner", mode: 0o600 })
  for (const file of layout.envFiles) expect(file, { owner: "root" })
  expect(layout.signingSecretFile, { owner: "runner", mode: 0o600, type: "regular file" })
  for (const file of [layout.gatewayUrlFile, layout.agentIdFile]) expect(file, { owner: "root", mode: 0o644 })
  expect(layout.firewallFile, { owner: "root" })
  expect(layout.unit, { owner: "root" })
  if (layout.dropIn !== null) expect(layout.dropIn, { owner: "root" })
  if (layout.gateway !== null) {
    expect(layout.gateway.unit, { owner: "root" })
    expect(layout.gateway.grantFile, { owner: "root", mode: 0o600 })
    expect(layout.gateway.envFile, { owner: "root" })
  }
  for (const entry of writable) {
    const [uid, gid, mode, ...rest] = entry.split(" ")
    problems.push(`${rest.join(" ")} is writable by the runner account (uid ${uid}, gid ${gid}, mode ${mode})`)
  }
  return problems
}

type Json = Record<string, unknown>

const matches = (expr: ReadonlyArray<Json>, left: (l: Json) => boolean, right: unknown) =>
  expr.some((e) => {
    const match = e.match as Json | undefined
    return match !== undefined && match.op === "==" && left(match.left as Json) && match.right === right
  })

/**
 * The table as `nft -j list table` read it back, checked against the rendering: every rule keyed to the uid, the
 * gateway port accepted (IPv4 and IPv6), and rejects for the host's own addresses and both range sets.
 */
export const firewallProblems = (readback: string, uid: number, gatewayPort: number): ReadonlyArray<string> => {
  let parsed: { nftables?: ReadonlyArray<Json> }
  try {
    parsed = JSON.parse(readback) as { nftables?: ReadonlyArray<Json> }
  } catch {
    return ["the firewall table is not loaded"]
  }
  const rules = (parsed.nftables ?? []).flatMap((entry) =>
    entry.rule === undefined ? [] : [((entry.rule as Json).expr ?? []) as ReadonlyArray<Json>]
  )
  const problems: Array<string> = []
  const keyed = (expr: ReadonlyArray<Json>) => matches(expr, (l) => (l?.meta as Json | undefined)?.key === "skuid", uid)
  if (rules.length === 0) problems.push("the firewall table has no rules")
  if (rules.some((expr) => !keyed(expr))) problems.push(`a firewall rule is not keyed to uid ${uid}`)
  const accepts = rules.filter((expr) => expr.some((e) => "accept" in e))
  const gateway = accepts.filter((expr) =>
    matches(expr, (l) => (l?.payload as Json | undefined)?.field === "dport", gatewayPort)
  )
  if (gateway.length !== 2) problems.push(`the gateway port ${gatewayPort} is not accepted for IPv4 and IPv6`)
  if (accepts.length !== gateway.length) problems.push("the firewall accepts more than the gateway port")
  const rejects = rules.filter((expr) => expr.some((e) => "reject" in e))
  if (rejects.length !== 3)
    problems.push(`expected 3 reject rules (own addresses, IPv4, IPv6), found ${rejects.length}`)
  return problems
}
