import { Schema } from "effect"
import { ProviderNames } from "../providers/Providers.js"

/** Target, service and principal names: DNS-label-like, so they are safe in object keys and unit names. */
export const Name = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,62}$/),
  Schema.annotations({ message: () => "must be 1-63 of a-z, 0-9, '.', '_' or '-', starting with a letter or digit" })
)

const PositiveInt = Schema.Int.pipe(Schema.positive())
const NonNegative = Schema.Number.pipe(Schema.nonNegative())
const AbsolutePath = Schema.String.pipe(
  Schema.pattern(/^\//),
  Schema.annotations({ message: () => "must be an absolute path" })
)

export const SshChannel = Schema.Struct({
  ssh: Schema.Struct({
    host: Schema.String.pipe(Schema.minLength(1)),
    port: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 65535)), { default: () => 22 }),
    user: Schema.String.pipe(Schema.minLength(1)),
    /** `item#field` in the vault holding the private key. */
    identity_item: Schema.String.pipe(
      Schema.pattern(/^[^#\s]+#[^#\s]+$/),
      Schema.annotations({ message: () => "must be a vault reference item#field" })
    ),
    /** The known_hosts file the host key is checked against (strictly); default KEEL_SSH_KNOWN_HOSTS. */
    known_hosts: Schema.optional(AbsolutePath)
  })
})

/** How the tool reaches a host: the local machine, or SSH with a key from the vault. */
export const Channel = Schema.Union(Schema.Literal("local"), SshChannel)

export const Endpoint = Schema.Struct({
  url: Schema.String.pipe(Schema.pattern(/^https?:\/\//)),
  /** Hosts that must be able to reach the endpoint (the reachability sweep runs from them). */
  consumers: Schema.optionalWith(Schema.Array(Name), { default: () => [] })
})

export const ServiceDeclaration = Schema.Struct({
  name: Name,
  /** The unit file: a systemd unit path on Linux, a launchd plist on macOS. */
  unit: AbsolutePath,
  program: Schema.optional(AbsolutePath),
  args: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] }),
  kind: Schema.optionalWith(Schema.Literal("service", "oneshot-timer", "recovery-managed"), {
    default: () => "service" as const
  }),
  endpoint: Schema.optional(Endpoint),
  /** The program's umask (octal, `0027`), rendered as `UMask=` / `Umask`; without it the manager's default, 0022. */
  umask: Schema.optional(
    Schema.String.pipe(Schema.pattern(/^0?[0-7]{3}$/, { message: () => "umask must be an octal mode such as 0027" }))
  ),
  /**
   * `beacon`: the host's beacon units (`ctl host beacon install`: a oneshot service and its timer, or a
   * launchd daemon). Reasserting it means enabling and verifying the installed timer, never a service ensure.
   */
  role: Schema.optional(Schema.Literal("beacon"))
})

export const CleanerNames = [
  "build_caches",
  "huggingface_cache",
  "weles_recordings",
  "chromium_clones",
  "queue_workdirs",
  "backup_twins",
  "release_store"
] as const

const cleanerFields = {
  min_age_seconds: Schema.optional(Schema.Int.pipe(Schema.nonNegative())),
  root: Schema.optional(AbsolutePath)
}

/** The settings every cleaner takes; each cleaner's own are added below, and nothing else is accepted. */
export const CleanerSettings = Schema.Struct(cleanerFields)

const HuggingfaceCacheSettings = Schema.Struct({
  ...cleanerFields,
  /** Snapshots no ref names may go (their blobs in a later pass). */
  delete_unreferenced_snapshots: Schema.optional(Schema.Boolean)
})

const BackupTwinsSettings = Schema.Struct({
  ...cleanerFields,
  /** The mirrored store the replica under `root` is compared with. */
  primary_root: Schema.optional(AbsolutePath)
})

const ReleaseStoreSettings = Schema.Struct({
  ...cleanerFields,
  keep_newest: Schema.optional(PositiveInt),
  /** Versions kept whatever else holds (`<product>/<version>`): the configuration pins of docs/janitor.md. */
  pins: Schema.optional(
    Schema.Array(Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9._-]*\/[0-9A-Za-z][0-9A-Za-z.+_-]*$/)))
  ),
  /** A run younger than this keeps its version (docs/janitor.md, "a young run"); default one day. */
  young_run_seconds: Schema.optional(Schema.Int.pipe(Schema.nonNegative()))
})

export const DiskCleanupPolicy = Schema.Struct({
  mode: Schema.Literal("off", "report", "enforce"),
  check_interval_seconds: PositiveInt,
  low_free_gb: NonNegative,
  target_free_gb: NonNegative,
  max_items_per_pass: PositiveInt,
  max_bytes_per_pass: PositiveInt,
  max_scan_items: Schema.Int.pipe(
    Schema.between(1, 200_000),
    Schema.annotations({ message: () => "must be an integer from 1 to 200000" })
  ),
  max_pass_seconds: Schema.optional(PositiveInt),
  cleaners: Schema.optionalWith(
    Schema.Struct({
      build_caches: Schema.optional(CleanerSettings),
      huggingface_cache: Schema.optional(HuggingfaceCacheSettings),
      weles_recordings: Schema.optional(CleanerSettings),
      chromium_clones: Schema.optional(CleanerSettings),
      queue_workdirs: Schema.optional(CleanerSettings),
      backup_twins: Schema.optional(BackupTwinsSettings),
      release_store: Schema.optional(ReleaseStoreSettings)
    }),
    { default: () => ({}) }
  )
}).pipe(
  Schema.filter((policy) =>
    policy.target_free_gb >= policy.low_free_gb
      ? undefined
      : { path: ["target_free_gb"], message: "must be at least low_free_gb" }
  )
)

/**
 * A target's storage for a storage-root handoff (docs/handoff.md): two physical roots, the route file naming the
 * one its object API serves, the declared services that write to storage, and the runtime pointed at A.
 */
export const StorageDeclaration = Schema.Struct({
  /** `a` is the primary (the union is built there and it serves afterwards); `b` the other root. */
  roots: Schema.Struct({ a: AbsolutePath, b: AbsolutePath }).pipe(
    Schema.filter((roots) => {
      const inside = (x: string, y: string) => x === y || x.startsWith(`${y.replace(/\/+$/, "")}/`)
      return inside(roots.a, roots.b) || inside(roots.b, roots.a)
        ? { path: ["b"], message: "must be neither a nor inside it (nor contain it)" }
        : undefined
    })
  ),
  /** The file naming, on its first line, the root the object API serves (KEEL_OBJECT_ROUTE_FILE on the target). */
  route_file: AbsolutePath,
  /** Names of this target's declared services that write to storage: stopped for the handoff, then restored. */
  writers: Schema.optionalWith(Schema.Array(Name), { default: () => [] }),
  /** The declared runtime pointed at A on activation: a symlink, or a file whose first line is the root. */
  runtime: Schema.Struct({ kind: Schema.Literal("symlink", "config_file"), path: AbsolutePath }),
  /** How long the handoff waits for the target's running jobs to finish before it refuses. */
  drain_timeout_seconds: Schema.optionalWith(PositiveInt, { default: () => 600 })
})

/** A binary the fleet delivers to a host (docs/releases.md): `ctl` is the tool's own, the one `ctl host recover` installs. */
export const ManagedBinary = Schema.Struct({
  name: Name,
  /** Where it is installed on the host (an absolute path; its directory holds the staged file and `.prev`). */
  path: AbsolutePath,
  /** The release product that ships it. */
  product: Schema.optionalWith(Name, { default: () => "keel" }),
  /** The version declared for the host (`ctl host declare-version`): what native delivery converges it to. */
  version: Schema.optional(Schema.String.pipe(Schema.pattern(/^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$/)))
})

/** A GitHub repository, `owner/name`. */
export const RepositoryName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9-]{0,38}\/[A-Za-z0-9._-]{1,100}$/),
  Schema.annotations({ message: () => "must be a repository owner/name" })
)

/**
 * The runner archive a pre-check runner installs, pinned (docs/runners.md): the download is checked against
 * `sha256` before anything is extracted.
 */
export const RunnerArchivePin = Schema.Struct({
  version: Schema.String.pipe(Schema.pattern(/^[0-9]+\.[0-9]+\.[0-9]+$/)),
  os: Schema.Literal("linux", "osx"),
  arch: Schema.Literal("x64", "arm64"),
  sha256: Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/)),
  url: Schema.String.pipe(Schema.pattern(/^https?:\/\/[^\s]+$/))
})

/** The target's pre-check runner (seed 002, pre-check runner rules; docs/runners.md). */
export const PrecheckRunnerDeclaration = Schema.Struct({
  provider: Schema.optionalWith(Schema.Literal("github"), { default: () => "github" as const }),
  /** The organization's URL the runner registers with (`config.sh --url`): https://github.com/<org>, or GHES's. */
  url: Schema.String.pipe(
    Schema.pattern(/^https?:\/\/[^/\s]+\/[A-Za-z0-9][A-Za-z0-9-]{0,38}$/),
    Schema.annotations({ message: () => "must be an organization URL https://<host>/<org>" })
  ),
  /**
   * The REST API base: https://api.github.com, or https://<ghes host>/api/v3. The credential travels to it, so plain
   * http is refused except to loopback.
   */
  api_url: Schema.optionalWith(
    Schema.String.pipe(
      Schema.pattern(/^(https:\/\/[^\s]+|http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?(\/[^\s]*)?)$/),
      Schema.annotations({ message: () => "must be an https URL (http only to loopback)" })
    ),
    { default: () => "https://api.github.com" }
  ),
  /** The runner group: it grants the repository list, and its name is the runner's group label. */
  runner_group: Name,
  /** The runner's name at the provider (default: the target's name). */
  name: Schema.optional(Name),
  /** The unprivileged account jobs run as. */
  account: Schema.optionalWith(Schema.String.pipe(Schema.pattern(/^[a-z_][a-z0-9_-]{0,30}$/)), {
    default: () => "keel-runner"
  }),
  runner_root: AbsolutePath,
  /** Where the systemd unit and its drop-in are written (Linux). */
  unit_dir: Schema.optionalWith(AbsolutePath, { default: () => "/etc/systemd/system" }),
  archive: RunnerArchivePin,
  /** The loopback port of `ctl host gateway`, the one private destination jobs may reach. */
  gateway_port: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 65535)), { default: () => 8787 }),
  /** `item#field`: the provider credential (a token with organization self-hosted runner admin rights). */
  credential: Schema.String.pipe(
    Schema.pattern(/^[^#\s]+#[^#\s]+$/),
    Schema.annotations({ message: () => "must be a vault reference item#field" })
  ),
  /** `item#field`: the request-signing secret the gateway checks jobs' requests with. */
  signing_secret: Schema.String.pipe(
    Schema.pattern(/^[^#\s]+#[^#\s]+$/),
    Schema.annotations({ message: () => "must be a vault reference item#field" })
  ),
  /** The repositories the runner group grants, explicitly (public ones only once admitted by repository-add). */
  repositories: Schema.Array(RepositoryName).pipe(Schema.minItems(1)),
  /**
   * The control plane the host's gateway forwards to (https, or http to loopback: a tunnel). Without it the gateway
   * is not installed.
   */
  control_plane_url: Schema.optional(
    Schema.String.pipe(
      Schema.pattern(/^(https:\/\/[^\s]+|http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?(\/[^\s]*)?)$/),
      Schema.annotations({ message: () => "must be an https URL (http only to loopback)" })
    )
  ),
  /**
   * What jobs may submit through the gateway: a fleet target and the command a job's argv must start with. Nothing
   * else is forwarded.
   */
  gateway_jobs: Schema.optionalWith(
    Schema.Array(Schema.Struct({ target: Name, argv: Schema.Array(Schema.String).pipe(Schema.minItems(1)) })),
    { default: () => [] }
  )
})

export const Target = Schema.Struct({
  name: Name,
  os: Schema.Literal("linux", "darwin"),
  channel: Channel,
  roles: Schema.optionalWith(Schema.Array(Name), { default: () => [] }),
  /** Hosts that consume this host's services. */
  consumers: Schema.optionalWith(Schema.Array(Name), { default: () => [] }),
  /** Mount points whose disk state the host's beacon reports. */
  mounts: Schema.optionalWith(Schema.Array(AbsolutePath), { default: () => ["/"] }),
  services: Schema.optionalWith(Schema.Array(ServiceDeclaration), { default: () => [] }),
  disk_cleanup: Schema.optional(DiskCleanupPolicy),
  /** Job slots the host offers (its quota in `ctl overview`). */
  slots: Schema.optional(PositiveInt),
  /** What one job-hour on this host costs, for the overview's billing. */
  hourly_rate: Schema.optional(NonNegative),
  /** The storage a storage-root handoff moves between (docs/handoff.md). */
  storage: Schema.optional(StorageDeclaration),
  /** The release platform this host builds for, when it is a builder (`linux-x64`, `darwin-arm64`, …; docs/releases.md). */
  release_platform: Schema.optional(Schema.String.pipe(Schema.pattern(/^[a-z0-9]+(-[a-z0-9_]+)+$/))),
  /** Binaries delivered to this host by release (docs/releases.md). */
  binaries: Schema.optionalWith(Schema.Array(ManagedBinary), { default: () => [] }),
  /** The pre-check runner this host runs (docs/runners.md). */
  precheck_runner: Schema.optional(PrecheckRunnerDeclaration)
})

/** The release authority (seed 002, "Release submission and delivery" rule 4; docs/releases.md). */
export const ReleaseSettings = Schema.Struct({
  /** The vault item whose field `private_key` holds the base64 PKCS#8 Ed25519 key; it never leaves the vault. */
  signing_key_item: Schema.optional(Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/))),
  /** The trusted key id, `sha256:<hex of the public key's SPKI DER>`: releases signed by another key are refused. */
  signing_key_id: Schema.optional(Schema.String.pipe(Schema.pattern(/^sha256:[0-9a-f]{64}$/)))
})

/** An `item#field` reference into the vault. */
export const SecretFieldReference = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}#[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/)
)

/** The agents' vault (seed 002: skarbiec): which `item#field` secrets builds, deliveries and grants may name. */
export const AgentSettings = Schema.Struct({
  skarbiec: Schema.optionalWith(
    Schema.Struct({ secret_fields: Schema.optionalWith(Schema.Array(SecretFieldReference), { default: () => [] }) }),
    { default: () => ({ secret_fields: [] }) }
  )
})

/** Fleet-wide pre-check runner settings: the public repositories `repository-add` admitted. */
export const PrecheckRunnerSettings = Schema.Struct({
  public_repositories: Schema.optionalWith(Schema.Array(RepositoryName), { default: () => [] })
})

/** A profile: the provider adapters it enables (their diagnostics are offered only then). */
export const Profile = Schema.Struct({
  providers: Schema.optionalWith(Schema.Array(Schema.Literal(...ProviderNames)), { default: () => [] })
})

export const Settings = Schema.Struct({
  /** The selected profile (a key of `profiles`); KEEL_PROFILE overrides it. None: no provider enabled. */
  profile: Schema.optional(Name),
  /** A beacon older than this makes every unit of its host `unknown`. */
  host_silence_seconds: Schema.optionalWith(PositiveInt, { default: () => 900 }),
  max_actions_per_tick: Schema.optionalWith(PositiveInt, { default: () => 5 }),
  autonomy_mode: Schema.optionalWith(Schema.Literal("report", "enforce-safe", "enforce-owned"), {
    default: () => "report" as const
  }),
  /** How often `ctl serve` runs the service reconciler's tick (0: never on a schedule, only `ctl optimize run`). */
  autonomy_interval_seconds: Schema.optionalWith(Schema.Int.pipe(Schema.nonNegative()), { default: () => 300 }),
  /** Consecutive mutations failed on one host that open its circuit breaker. */
  breaker_failures: Schema.optionalWith(PositiveInt, { default: () => 3 }),
  /** How long an open breaker refuses mutations before letting one trial through (half-open). */
  breaker_cooldown_seconds: Schema.optionalWith(PositiveInt, { default: () => 900 }),
  release: Schema.optionalWith(ReleaseSettings, { default: () => ({}) }),
  agent: Schema.optionalWith(AgentSettings, { default: () => ({ skarbiec: { secret_fields: [] } }) }),
  precheck_runner: Schema.optionalWith(PrecheckRunnerSettings, { default: () => ({ public_repositories: [] }) })
})

export const ReleaseControl = Schema.Struct({
  /** Compare-and-set generation of the desired release state. */
  generation: Schema.Int.pipe(Schema.nonNegative()),
  channel: Schema.optionalWith(Schema.String, { default: () => "stable" }),
  /** Desired version per binary, e.g. { keel: "1.4.2" }. */
  versions: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), { default: () => ({}) })
})

/** Which principals hold each registry action. */
const ActionHolders = Schema.Struct({
  "host-health-write": Schema.optional(Schema.Array(Name)),
  "storage-reconcile-read": Schema.optional(Schema.Array(Name)),
  "storage-reconcile-apply": Schema.optional(Schema.Array(Name)),
  /** A target's handoff worker: its queue's pause, drain and cancelled jobs (docs/handoff.md). */
  "storage-queue": Schema.optional(Schema.Array(Name)),
  "service-ensure": Schema.optional(Schema.Array(Name)),
  "space-reclaim": Schema.optional(Schema.Array(Name)),
  "release-submit": Schema.optional(Schema.Array(Name)),
  "release-promote": Schema.optional(Schema.Array(Name)),
  /** Read any object through the object API (GET, HEAD, list). */
  "object-read": Schema.optional(Schema.Array(Name)),
  /** Write or delete objects the other actions do not cover (under the gateway's writable prefixes). */
  "object-write": Schema.optional(Schema.Array(Name)),
  /** Publish a host's own state objects: `state/capacity/<host>.json`, `state/janitor/<host>.json`. */
  "host-state-write": Schema.optional(Schema.Array(Name)),
  /** Read the fleet's state over HTTP: hosts, gates, the overview. */
  "fleet-read": Schema.optional(Schema.Array(Name)),
  /** Queue jobs on a target and read them over HTTP (`POST|GET /api/fleet/jobs`): a pre-check runner's gateway. */
  "job-submit": Schema.optional(Schema.Array(Name)),
  /** Read a target's queued or running jobs over HTTP (`GET /api/fleet/jobs?target=`): a host's janitor. */
  "job-read": Schema.optional(Schema.Array(Name))
})

export type FleetAction = keyof typeof ActionHolders.fields

/**
 * The registry actions: what a registry's `actions:` block assigns and what a vault grant may carry
 * (`ctl vault grant create --action`). One list: adding an action above adds it to both.
 */
export const FleetActions = Object.keys(ActionHolders.fields) as ReadonlyArray<FleetAction>

export const FleetRegistryDocument = Schema.Struct({
  version: Schema.Literal(1),
  settings: Schema.optionalWith(Settings, { default: () => Schema.decodeSync(Settings)({}) }),
  /** Which principals hold each action. */
  actions: Schema.optionalWith(ActionHolders, { default: () => ({}) }),
  /** Named profiles, each enabling provider adapters; `settings.profile` (or KEEL_PROFILE) selects one. */
  profiles: Schema.optionalWith(Schema.Record({ key: Name, value: Profile }), { default: () => ({}) }),
  release_control: Schema.optionalWith(ReleaseControl, {
    default: () => ({ generation: 0, channel: "stable", versions: {} })
  }),
  targets: Schema.Array(Target).pipe(Schema.minItems(1))
})
export type FleetRegistryDocument = typeof FleetRegistryDocument.Type
export type Target = typeof Target.Type
export type DiskCleanupPolicy = typeof DiskCleanupPolicy.Type

/**
 * What a schema cannot say: unique target and service names, and references (consumers) that name a
 * declared target. Each problem carries the path of the offending field.
 */
/**
 * The same cross-checks on a document that did not decode, as far as its shape allows (targets with a
 * string name, consumers that are strings), so `registry validate` reports every problem at once.
 */
export const rawCrossReferenceProblems = (raw: unknown): ReadonlyArray<string> => {
  const targets = (raw as { targets?: unknown })?.targets
  if (!Array.isArray(targets)) return []
  const named = (value: unknown): value is { name: string } =>
    typeof value === "object" && value !== null && typeof (value as { name?: unknown }).name === "string"
  const asList = (value: unknown) => (Array.isArray(value) ? value : [])
  return crossReferenceProblems({
    targets: targets.filter(named).map((t) => ({
      name: t.name,
      consumers: asList((t as { consumers?: unknown }).consumers).filter((c): c is string => typeof c === "string"),
      services: asList((t as { services?: unknown }).services)
        .filter(named)
        .map((service) => ({
          name: service.name,
          endpoint: {
            consumers: asList((service as { endpoint?: { consumers?: unknown } }).endpoint?.consumers).filter(
              (c): c is string => typeof c === "string"
            )
          }
        }))
    }))
  } as unknown as FleetRegistryDocument)
}

export const crossReferenceProblems = (registry: FleetRegistryDocument): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const names = new Set<string>()
  registry.targets.forEach((target, i) => {
    if (names.has(target.name)) problems.push(`targets.${i}.name: duplicate target ${target.name}`)
    names.add(target.name)
  })
  registry.targets.forEach((target, i) => {
    target.consumers.forEach((consumer, j) => {
      if (!names.has(consumer)) problems.push(`targets.${i}.consumers.${j}: no target named ${consumer}`)
    })
    const services = new Set<string>()
    target.services.forEach((service, j) => {
      if (services.has(service.name))
        problems.push(`targets.${i}.services.${j}.name: duplicate service ${service.name}`)
      services.add(service.name)
      service.endpoint?.consumers.forEach((consumer, k) => {
        if (!names.has(consumer))
          problems.push(`targets.${i}.services.${j}.endpoint.consumers.${k}: no target named ${consumer}`)
      })
    })
    target.storage?.writers.forEach((writer, j) => {
      if (!services.has(writer)) problems.push(`targets.${i}.storage.writers.${j}: no service named ${writer}`)
    })
    const binaries = new Set<string>()
    // `?? []`: the same checks run on a document that did not decode (no defaults applied).
    for (const [j, binary] of (target.binaries ?? []).entries()) {
      if (binaries.has(binary.name)) problems.push(`targets.${i}.binaries.${j}.name: duplicate binary ${binary.name}`)
      binaries.add(binary.name)
    }
    const runner = target.precheck_runner
    if (runner !== undefined && runner.archive.os !== (target.os === "darwin" ? "osx" : "linux"))
      problems.push(
        `targets.${i}.precheck_runner.archive.os: ${runner.archive.os} is not the archive for a ${target.os} host`
      )
  })
  // `?.`: the same checks run on a document that did not decode (no defaults applied).
  const selected = registry.settings?.profile
  if (selected !== undefined && !Object.hasOwn(registry.profiles ?? {}, selected))
    problems.push(
      `settings.profile: no profile named ${selected} (profiles: ${Object.keys(registry.profiles ?? {}).join(", ") || "none"})`
    )
  return problems
}
