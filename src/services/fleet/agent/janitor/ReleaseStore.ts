import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, Option } from "effect"
import type { RunRecord } from "../../../../contracts/fleet/ReleaseRuns.js"
import type { ReleaseManifest } from "../../shared/releases/ReleaseManifest.js"
import type { Candidate, Skip } from "./BuildCaches.js"
import type { ScanBudget } from "./ScanBudget.js"

/**
 * Where the release_store cleaner reads completion evidence: the control plane's object store (this host's own on
 * the control plane, the object API elsewhere). Unreadable evidence is no evidence: the version is kept.
 */
export interface ReleaseEvidenceSource {
  readonly get: (key: string) => Effect.Effect<Option.Option<Uint8Array>, { readonly detail: string }>
  readonly list: (prefix: string) => Effect.Effect<ReadonlyArray<string>, { readonly detail: string }>
}

/** What the registry and the cleaner's settings say must stay (seed 002, disk-cleanup rule 3). */
export interface RetentionRules {
  /** `<product>/<version>` a host names: a target's binary declares that version of that product. */
  readonly namedByHost: ReadonlySet<string>
  /** `<product>/<version>` the registry's `release_control.versions` declares. */
  readonly declared: ReadonlySet<string>
  /** `<product>/<version>` pinned by the cleaner's `pins`. */
  readonly pinned: ReadonlySet<string>
  readonly keepNewest: number
  readonly youngRunSeconds: number
  readonly minAgeSeconds: number
}

/** The reasons a version stays, in the order they are checked; each is a `skipped` reason of the report. */
export const RETAINED = {
  namedByHost: "retained_named_by_host",
  declared: "retained_registry_declaration",
  pinned: "retained_configuration_pin",
  installed: "retained_installed",
  activeRun: "retained_active_run",
  youngRun: "retained_young_run",
  newest: "retained_keep_newest",
  newestInstallable: "retained_newest_installable"
} as const

const textOf = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

/** Versions compared as people read them: numeric parts by number, the rest by text (1.10.0 after 1.9.2). */
export const compareVersions = (a: string, b: string) => {
  const parts = (v: string) => v.split(/[.+_-]/)
  const pa = parts(a)
  const pb = parts(b)
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const x = pa[i]
    const y = pb[i]
    if (x === undefined) return -1
    if (y === undefined) return 1
    const nx = /^\d+$/.test(x) ? Number(x) : Number.NaN
    const ny = /^\d+$/.test(y) ? Number(y) : Number.NaN
    if (!Number.isNaN(nx) && !Number.isNaN(ny)) {
      if (nx !== ny) return nx - ny
    } else if (x !== y) return x < y ? -1 : 1
  }
  return 0
}

interface SourceIdentity {
  readonly revision: string
  readonly sha256: string
}

const parseJson = <A>(bytes: Uint8Array): A | undefined => {
  try {
    return JSON.parse(textOf(bytes)) as A
  } catch {
    return undefined
  }
}

/** A source-revision.json for exactly this product and version, or undefined. */
const sourceIdentityOf = (bytes: Uint8Array, product: string, version: string): SourceIdentity | undefined => {
  const doc = parseJson<Record<string, unknown>>(bytes)
  if (
    doc === undefined ||
    doc.schema !== "keel.source-revision/v1" ||
    doc.product !== product ||
    doc.version !== version ||
    typeof doc.revision !== "string" ||
    typeof doc.sha256 !== "string"
  )
    return undefined
  return { revision: doc.revision, sha256: doc.sha256 }
}

/** The evidence of one pass, read once: every run record and the canonical publication of the versions seen. */
interface Evidence {
  readonly runs: ReadonlyArray<RunRecord>
  readonly canonical: ReadonlyMap<
    string,
    { readonly source: Option.Option<Uint8Array>; readonly manifest: Option.Option<ReleaseManifest> }
  >
  readonly unreadable: string | null
}

const gather = (source: ReleaseEvidenceSource, versions: ReadonlyArray<{ product: string; version: string }>) =>
  Effect.gen(function* () {
    const keys = yield* source.list("release-runs/")
    const runs: Array<RunRecord> = []
    for (const key of keys.filter((k) => /^release-runs\/[^/]+\/run\.json$/.test(k))) {
      const bytes = yield* source.get(key)
      const record = Option.isSome(bytes) ? parseJson<RunRecord>(bytes.value) : undefined
      if (record?.schema === "keel.release-run/v1") runs.push(record)
    }
    const canonical = new Map<string, { source: Option.Option<Uint8Array>; manifest: Option.Option<ReleaseManifest> }>()
    for (const { product, version } of versions) {
      const prefix = `releases/${product}/${version}/`
      const sourceBytes = yield* source.get(`${prefix}source-revision.json`)
      const manifestBytes = yield* source.get(`${prefix}release.json`)
      canonical.set(`${product}/${version}`, {
        source: sourceBytes,
        manifest: Option.flatMap(manifestBytes, (b) => Option.fromNullable(parseJson<ReleaseManifest>(b)))
      })
    }
    return { runs, canonical, unreadable: null } satisfies Evidence as Evidence
  }).pipe(
    Effect.catchAll((error) => Effect.succeed<Evidence>({ runs: [], canonical: new Map(), unreadable: error.detail }))
  )

/**
 * release_store (seed 002, disk-cleanup rules 3–6; docs/janitor.md): a host-local release store `<root>/<product>/
 * <version>/` (the layout `ctl release catalog sync` reads). A version stays when a host names it, the registry
 * declares it, the cleaner pins it, `<product>/current` links to it, a run for it is active or young, it is among
 * the `keep_newest` newest of its product or the newest installable release of its publication family (product and
 * channel). Any other version is reclaimed only with a readable source-revision.json (its own, else the canonical
 * one) and a completed pipeline run for that exact source — a published run, or a publication reconciled into the
 * catalog by `catalog sync` — else it is refused as `source_identity_unverified` or
 * `publication_completion_unverified`; a version holding an installer publication (`installers/`), which no
 * completion record covers, stays as `installer_publication_untracked`. Only the payload directory goes: the
 * catalog's reservations are never touched.
 */
export const scanReleaseStore = (options: {
  readonly root: string
  readonly nowMs: number
  readonly rules: RetentionRules
  readonly evidence: ReleaseEvidenceSource
  readonly budget: ScanBudget
  /** The product a budget stopped at last pass: the walk resumes there (that product whole). */
  readonly cursor: string | null
}) =>
  Effect.gen(function* () {
    const listed = listVersions(options.root, options.cursor, options.budget)
    const evidence = yield* gather(options.evidence, listed.dirs)
    const kept = keptAsNewest(listed.dirs, evidence, options.rules.keepNewest)
    const candidates: Array<Candidate> = []
    const skipped: Array<Skip> = [...listed.skipped]
    for (const dir of listed.dirs) {
      const verdict = judgeVersion(dir, evidence, kept, options)
      if ("dev" in verdict) candidates.push(verdict)
      else skipped.push(verdict)
    }
    if (evidence.unreadable !== null && listed.dirs.length > 0)
      skipped.push({ path: options.root, reason: `evidence_unreadable: ${evidence.unreadable}` })
    return { candidates, skipped, scanned: listed.scanned, cursor: listed.stoppedAt }
  })

interface VersionDir {
  readonly product: string
  readonly version: string
  readonly dir: string
  readonly stat: fs.Stats
}

/** `<root>/<product>/<version>` directories from the cursor on, a product whole or left for the next pass. */
const listVersions = (root: string, cursor: string | null, budget: ScanBudget) => {
  const skipped: Array<Skip> = []
  const dirs: Array<VersionDir> = []
  const listDirs = (dir: string) => {
    try {
      return fs
        .readdirSync(dir, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name)
        .sort()
    } catch (error) {
      skipped.push({ path: dir, reason: `unreadable: ${(error as Error).message}` })
      return []
    }
  }
  let scanned = 0
  let stoppedAt: string | null = null
  for (const product of listDirs(root)) {
    if (cursor !== null && product < cursor) continue
    const versions = listDirs(path.join(root, product))
    // A product is judged whole (its newest versions need all of them) or left for the next pass.
    if (!budget.charge(versions.length)) {
      stoppedAt = product
      break
    }
    for (const version of versions) {
      scanned++
      const dir = path.join(root, product, version)
      const stat = fs.lstatSync(dir, { throwIfNoEntry: false })
      if (stat?.isDirectory() === true) dirs.push({ product, version, dir, stat })
    }
  }
  return { dirs, skipped, scanned, stoppedAt }
}

/** Per product its newest versions, and per publication family (product, channel) its newest installable one. */
const keptAsNewest = (dirs: ReadonlyArray<VersionDir>, evidence: Evidence, keepNewest: number) => {
  const manifestOf = (product: string, version: string) => evidence.canonical.get(`${product}/${version}`)?.manifest
  const channelOf = (product: string, version: string) => {
    const manifest = manifestOf(product, version)
    if (manifest !== undefined && Option.isSome(manifest)) return manifest.value.channel
    return evidence.runs.find((r) => r.inputs.product === product && r.inputs.version === version)?.inputs.channel
  }
  const installable = (product: string, version: string) => {
    const manifest = manifestOf(product, version)
    return manifest !== undefined && Option.isSome(manifest)
  }
  const byProduct = new Map<string, Array<string>>()
  for (const { product, version } of dirs) byProduct.set(product, [...(byProduct.get(product) ?? []), version])
  const newest = new Set<string>()
  const newestInstallable = new Set<string>()
  for (const [product, versions] of byProduct) {
    const ordered = [...versions].sort(compareVersions).reverse()
    for (const version of ordered.slice(0, keepNewest)) newest.add(`${product}/${version}`)
    const families = new Set<string>()
    for (const version of ordered) {
      if (!installable(product, version)) continue
      const family = channelOf(product, version) ?? ""
      if (families.has(family)) continue
      families.add(family)
      newestInstallable.add(`${product}/${version}`)
    }
  }
  return { newest, newestInstallable }
}

/** The version `<product>/current` links to, if any. */
const installedOf = (root: string, product: string) => {
  try {
    return path.basename(fs.readlinkSync(path.join(root, product, "current")))
  } catch {
    return undefined
  }
}

/** Why a version stays (rule 3's reasons in order), or undefined. */
const retentionOf = (
  { product, version }: VersionDir,
  runs: ReadonlyArray<RunRecord>,
  kept: ReturnType<typeof keptAsNewest>,
  options: { readonly root: string; readonly nowMs: number; readonly rules: RetentionRules }
) => {
  const id = `${product}/${version}`
  const { rules } = options
  if (rules.namedByHost.has(id)) return RETAINED.namedByHost
  if (rules.declared.has(id)) return RETAINED.declared
  if (rules.pinned.has(id)) return RETAINED.pinned
  if (installedOf(options.root, product) === version) return RETAINED.installed
  if (runs.some((r) => r.state === "submitted" || r.state === "building" || r.state === "publishing"))
    return RETAINED.activeRun
  if (runs.some((r) => options.nowMs - Date.parse(r.created_at) < rules.youngRunSeconds * 1000))
    return RETAINED.youngRun
  if (kept.newest.has(id)) return RETAINED.newest
  if (kept.newestInstallable.has(id)) return RETAINED.newestInstallable
  return undefined
}

/** The version's own source-revision.json, else the canonical one; unreadable evidence proves nothing. */
const identityOf = ({ dir, product, version }: VersionDir, evidence: Evidence) => {
  const own = (() => {
    try {
      return Option.some(new Uint8Array(fs.readFileSync(path.join(dir, "source-revision.json"))))
    } catch {
      return Option.none<Uint8Array>()
    }
  })()
  const sourceBytes = Option.isSome(own)
    ? own
    : (evidence.canonical.get(`${product}/${version}`)?.source ?? Option.none())
  return Option.isSome(sourceBytes) ? sourceIdentityOf(sourceBytes.value, product, version) : undefined
}

/** One version: kept (a skip naming why) or a candidate (a completed publication of exactly its source, old enough). */
const judgeVersion = (
  entry: VersionDir,
  evidence: Evidence,
  kept: ReturnType<typeof keptAsNewest>,
  options: { readonly root: string; readonly nowMs: number; readonly rules: RetentionRules }
): Skip | Candidate => {
  const { dir, product, stat, version } = entry
  const runs = evidence.runs.filter((r) => r.inputs.product === product && r.inputs.version === version)
  const retained = retentionOf(entry, runs, kept, options)
  if (retained !== undefined) return { path: dir, reason: retained }
  if (fs.existsSync(path.join(dir, "installers"))) return { path: dir, reason: "installer_publication_untracked" }
  const identity = identityOf(entry, evidence)
  if (identity === undefined) return { path: dir, reason: "source_identity_unverified" }
  const exact = (source: { revision: string; sha256: string }) =>
    source.revision === identity.revision && source.sha256 === identity.sha256
  // A candidate tag's publication never proves completion (seed 002, release rule 7).
  const completed = runs.some(
    (r) =>
      r.state === "published" &&
      exact(r.inputs.source) &&
      (r.steps.tag as { kind?: string } | undefined)?.kind !== "candidate"
  )
  if (!completed) return { path: dir, reason: "publication_completion_unverified" }
  if (options.nowMs - stat.mtimeMs < options.rules.minAgeSeconds * 1000) return { path: dir, reason: "too_young" }
  return { path: dir, bytes: 0, reason: "publication_completed", dev: stat.dev, ino: stat.ino, directory: true }
}
