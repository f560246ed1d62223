import { lookup } from "node:dns/promises"
import { BlockList, isIP } from "node:net"
import { Config, Duration, Effect, Option, Schema } from "effect"
import { durationSetting } from "./DurationSetting.js"
import { type RunnerTls, readRunnerTls } from "./RunnerTlsFiles.js"

/**
 * How this process hosts Keel's actors (docs/cluster.md): `single` (the default) is the embedded runner that owns
 * every shard; `runners` makes it one of several `ctl serve` processes on one PostgreSQL database that share the
 * shards (@effect/cluster's socket runners).
 */
export const clusterSettings = Config.all({
  mode: Config.literal("single", "runners")("KEEL_CLUSTER_MODE").pipe(Config.withDefault("single" as const)),
  /** `host:port` the other runners dial to reach this one. */
  runnerAddress: Config.option(Config.string("KEEL_RUNNER_ADDRESS")),
  /** `host:port` the runner port binds; default the runner address. */
  runnerListen: Config.option(Config.string("KEEL_RUNNER_LISTEN")),
  /**
   * Binding a public address is refused unless this is true, or the port speaks TLS: the runner protocol itself has
   * no authentication.
   */
  runnerAllowPublic: Config.boolean("KEEL_RUNNER_ALLOW_PUBLIC").pipe(Config.withDefault(false)),
  /**
   * Mutual TLS on the runner port (all three or none; file paths): the shared CA's certificate(s), this runner's
   * certificate signed by it, and its private key. docs/cluster.md, "Security of the runner port".
   */
  runnerTlsCa: Config.option(Config.string("KEEL_RUNNER_TLS_CA")),
  runnerTlsCert: Config.option(Config.string("KEEL_RUNNER_TLS_CERT")),
  runnerTlsKey: Config.option(Config.string("KEEL_RUNNER_TLS_KEY")),
  /** Shards per group: the same on every runner, for the life of the database (a change moves every entity). */
  shards: Config.integer("KEEL_CLUSTER_SHARDS").pipe(
    Config.validate({ message: "must be a whole number from 1 to 10000", validation: (n) => n >= 1 && n <= 10_000 }),
    Config.withDefault(300)
  ),
  /** A runner whose heartbeat is older than this is gone: its shards go to the others. */
  lockExpiration: durationSetting("KEEL_RUNNER_LOCK_EXPIRATION").pipe(Config.withDefault(Duration.seconds(6))),
  /** How often a runner pings the others (the health check) and refreshes its shard locks. */
  healthInterval: durationSetting("KEEL_RUNNER_HEALTH_INTERVAL").pipe(Config.withDefault(Duration.seconds(2))),
  /** This runner's share of the shards relative to the others' (the hash ring's weight). */
  weight: Config.integer("KEEL_RUNNER_WEIGHT").pipe(
    Config.validate({ message: "must be a whole number from 1 to 100", validation: (n) => n >= 1 && n <= 100 }),
    Config.withDefault(1)
  ),
  /** Shard groups this runner hosts (comma-separated); `default` holds every entity not pinned elsewhere. */
  shardGroups: Config.array(Config.string(), "KEEL_RUNNER_SHARD_GROUPS").pipe(Config.withDefault(["default"]))
})

export type ClusterSettings = Config.Config.Success<typeof clusterSettings>

/** Runners mode cannot start as configured: the process stops before it hosts any actor. */
export class RunnersRefused extends Schema.TaggedError<RunnersRefused>()("RunnersRefused", {
  code: Schema.Literal(
    "RUNNERS_NEED_POSTGRES",
    "RUNNERS_NEED_VAULT_KEY",
    "RUNNERS_NEED_SHARED_OBJECTS",
    "RUNNER_ADDRESS_INVALID",
    "RUNNER_ADDRESS_PUBLIC",
    "RUNNER_TLS_INVALID"
  ),
  detail: Schema.String
}) {}

export interface HostPort {
  readonly host: string
  readonly port: number
}

/** `host:port`, `[v6]:port`; undefined when it is not one. */
export const parseHostPort = (text: string): HostPort | undefined => {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text.trim())
  if (match === null) return undefined
  const port = Number(match[3])
  if (port < 1 || port > 65_535) return undefined
  return { host: (match[1] ?? match[2])!, port }
}

const privateRanges = (() => {
  const list = new BlockList()
  for (const [net, prefix] of [
    ["127.0.0.0", 8],
    ["10.0.0.0", 8],
    ["172.16.0.0", 12],
    ["192.168.0.0", 16],
    ["169.254.0.0", 16],
    ["100.64.0.0", 10]
  ] as const)
    list.addSubnet(net, prefix, "ipv4")
  for (const [net, prefix] of [
    ["::1", 128],
    ["fc00::", 7],
    ["fe80::", 10]
  ] as const)
    list.addSubnet(net, prefix, "ipv6")
  return list
})()

/** Loopback, RFC 1918, link-local, CGNAT, IPv6 unique-local or link-local: not reachable from the internet. */
export const isPrivateAddress = (ip: string): boolean => {
  const family = isIP(ip)
  if (family === 0) return false
  return privateRanges.check(ip, family === 4 ? "ipv4" : "ipv6")
}

/**
 * Why the runner port must not bind `host`, or undefined when it may: every address the name resolves to must be
 * private (`0.0.0.0`/`::`, every interface, counts as public).
 */
export const publicBindReason = async (host: string): Promise<string | undefined> => {
  if (host === "0.0.0.0" || host === "::") return `${host} is every interface, public ones included`
  const addresses = isIP(host) !== 0 ? [host] : (await lookup(host, { all: true })).map((a) => a.address)
  const open = addresses.filter((address) => !isPrivateAddress(address))
  return open.length === 0 ? undefined : `${host} is ${open.join(", ")}, a public address`
}

export interface RunnerPlan {
  readonly address: HostPort
  readonly listen: HostPort
  /** The runner port's TLS when configured; none is plain TCP. */
  readonly tls: Option.Option<RunnerTls>
}

const TLS_SETTINGS = ["KEEL_RUNNER_TLS_CA", "KEEL_RUNNER_TLS_CERT", "KEEL_RUNNER_TLS_KEY"] as const

/** `on` when the three TLS settings are given, `off` when none is, `incomplete` otherwise (refused in runners mode). */
export const runnerTlsState = (settings: ClusterSettings): "on" | "off" | "incomplete" => {
  const given = [settings.runnerTlsCa, settings.runnerTlsCert, settings.runnerTlsKey].filter(Option.isSome).length
  return given === 3 ? "on" : given === 0 ? "off" : "incomplete"
}

/**
 * The runner port's TLS from the settings: none when no TLS setting is given; refused (`RUNNER_TLS_INVALID`) when only
 * some are, or when the files cannot make it (readRunnerTls says why, never with a key's contents).
 */
export const planRunnerTls = (settings: ClusterSettings) =>
  Effect.gen(function* () {
    const state = runnerTlsState(settings)
    if (state === "off") return Option.none<RunnerTls>()
    if (state === "incomplete") {
      const values = [settings.runnerTlsCa, settings.runnerTlsCert, settings.runnerTlsKey]
      const missing = TLS_SETTINGS.filter((_, i) => Option.isNone(values[i]!))
      return yield* new RunnersRefused({
        code: "RUNNER_TLS_INVALID",
        detail: `${TLS_SETTINGS.join(", ")} go together (all three or none); ${missing.join(" and ")} missing`
      })
    }
    const files = {
      ca: Option.getOrThrow(settings.runnerTlsCa),
      cert: Option.getOrThrow(settings.runnerTlsCert),
      key: Option.getOrThrow(settings.runnerTlsKey)
    }
    return yield* readRunnerTls(files).pipe(
      Effect.map(Option.some),
      Effect.mapError((invalid) => new RunnersRefused({ code: "RUNNER_TLS_INVALID", detail: invalid.detail }))
    )
  })

/**
 * The checks runners mode makes before it starts (docs/cluster.md, "Refusals"), from what the process is configured
 * with: the engine, whether a vault key every runner can share is given, the object backend, the addresses, the
 * runner port's TLS files.
 */
export const planRunners = (
  settings: ClusterSettings,
  facts: { readonly engine: "sqlite" | "pg"; readonly sharedVaultKey: boolean; readonly objectStore: string }
) =>
  Effect.gen(function* () {
    const refuse = (code: RunnersRefused["code"], detail: string) => Effect.fail(new RunnersRefused({ code, detail }))
    if (facts.engine !== "pg")
      return yield* refuse(
        "RUNNERS_NEED_POSTGRES",
        "KEEL_CLUSTER_MODE=runners needs KEEL_DATABASE_URL (PostgreSQL): the runners share one database"
      )
    if (!facts.sharedVaultKey)
      return yield* refuse(
        "RUNNERS_NEED_VAULT_KEY",
        "KEEL_CLUSTER_MODE=runners needs the vault key every runner reads: KEEL_VAULT_KEY, or KEEL_VAULT_KEY_FILE naming a file"
      )
    if (facts.objectStore !== "sql")
      return yield* refuse(
        "RUNNERS_NEED_SHARED_OBJECTS",
        `KEEL_CLUSTER_MODE=runners needs KEEL_OBJECT_STORE=sql (the shared database); ${facts.objectStore} is this machine's own`
      )
    if (Option.isNone(settings.runnerAddress))
      return yield* refuse("RUNNER_ADDRESS_INVALID", "KEEL_CLUSTER_MODE=runners needs KEEL_RUNNER_ADDRESS (host:port)")
    const address = parseHostPort(settings.runnerAddress.value)
    if (address === undefined)
      return yield* refuse(
        "RUNNER_ADDRESS_INVALID",
        `KEEL_RUNNER_ADDRESS must be host:port, not ${JSON.stringify(settings.runnerAddress.value)}`
      )
    const listen = Option.isSome(settings.runnerListen) ? parseHostPort(settings.runnerListen.value) : address
    if (listen === undefined)
      return yield* refuse(
        "RUNNER_ADDRESS_INVALID",
        `KEEL_RUNNER_LISTEN must be host:port, not ${JSON.stringify(Option.getOrElse(settings.runnerListen, () => ""))}`
      )
    const tls = yield* planRunnerTls(settings)
    // With TLS only a holder of a certificate from the shared CA gets past the handshake: a public address is what it
    // is for. Without it, anything that reaches the port is trusted, so a public one must be allowed on purpose.
    if (!settings.runnerAllowPublic && Option.isNone(tls)) {
      const reason = yield* Effect.tryPromise({
        try: () => publicBindReason(listen.host),
        catch: (error) =>
          new RunnersRefused({
            code: "RUNNER_ADDRESS_INVALID",
            detail: `the runner's listen host ${listen.host} does not resolve: ${String(error)}`
          })
      })
      if (reason !== undefined)
        return yield* refuse(
          "RUNNER_ADDRESS_PUBLIC",
          `the runner port would listen on ${reason}; anything that reaches it can send any actor any message. ` +
            "Bind a loopback or private address, configure TLS (KEEL_RUNNER_TLS_CA, KEEL_RUNNER_TLS_CERT, KEEL_RUNNER_TLS_KEY), " +
            "or set KEEL_RUNNER_ALLOW_PUBLIC=true behind a firewall (docs/cluster.md)"
        )
    }
    return { address, listen, tls } satisfies RunnerPlan
  })
