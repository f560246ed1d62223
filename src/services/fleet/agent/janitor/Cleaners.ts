import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect } from "effect"
import type { JobState } from "../../../../contracts/fleet/Jobs.js"
import type { CleanerNames, DiskCleanupPolicy } from "../../shared/registry/Schema.js"
import { scanBackupTwins, twinRefusal } from "./BackupTwins.js"
import { CACHEDIR_SIGNATURE, type Candidate, type Skip, scanBuildCaches } from "./BuildCaches.js"
import { defaultCloneRoots, scanChromiumClones } from "./ChromiumClones.js"
import { scanHuggingfaceCache, stillHuggingfaceEligible } from "./HuggingfaceCache.js"
import type { ProtectedPath } from "./Protection.js"
import { scanQueueWorkdirs } from "./QueueWorkdirs.js"
import { PROOF_SUFFIX, recordingRefusal, scanRecordings } from "./Recordings.js"
import { type ReleaseEvidenceSource, scanReleaseStore } from "./ReleaseStore.js"
import { type ResolvedRoot, resolveRoot } from "./SafeRemove.js"
import type { ScanBudget } from "./ScanBudget.js"

export interface CleanerScan {
  readonly candidates: ReadonlyArray<Candidate>
  readonly skipped: ReadonlyArray<Skip>
  readonly scanned: number
  /** Where the next pass resumes this cleaner's walk; null when the walk completed. */
  readonly cursor: unknown
}

/** How a candidate is removed: checks that need the outside world first, then those on the opened item. */
export interface Removal {
  /** A refusal found before touching the file system (e.g. the job is running again). */
  readonly refusal?: string | undefined
  readonly keepLast?: string | undefined
  readonly companions?: ReadonlyArray<string> | undefined
  readonly verify?: ((access: string, stat: fs.Stats) => string | undefined) | undefined
}

/** One cleaner the pass iterates: its resolved root, its scan, and how its candidates are re-checked. */
export interface CleanerRecord {
  readonly name: string
  readonly root: ResolvedRoot
  /** Other paths this cleaner reads but never deletes from (backup_twins' primary). */
  readonly reads: ReadonlyArray<string>
  /** `guard`: every protected path of the pass (the build-cache walk neither deletes nor enters them). */
  readonly scan: (
    budget: ScanBudget,
    cursor: unknown,
    guard: ReadonlyArray<ProtectedPath>
  ) => Effect.Effect<CleanerScan>
  readonly removal: (candidate: Candidate & { readonly resumed?: boolean }, nowMs: number) => Effect.Effect<Removal>
}

export type CleanerSlot =
  | { readonly kind: "ready"; readonly record: CleanerRecord }
  | { readonly kind: "unavailable"; readonly name: string; readonly status: string; readonly reason: string }

export interface CleanerContext {
  readonly policy: DiskCleanupPolicy
  /** When the pass started (by the Effect Clock): the age rules' "now". */
  readonly nowMs: number
  readonly uid: number
  readonly platform: NodeJS.Platform
  readonly statesOf: (ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, JobState>>
  readonly onProgress?: ((scanned: number) => void) | undefined
  /** What release_store needs beyond its settings: the registry's retention facts and where evidence is read. */
  readonly release?:
    | {
        readonly namedByHost: ReadonlySet<string>
        readonly declared: ReadonlySet<string>
        readonly evidence: ReleaseEvidenceSource
        /** The control plane's object store on this host: canonical payloads, never a release_store root. */
        readonly objectDir: string
      }
    | undefined
}

const FINISHED: ReadonlyArray<JobState> = ["succeeded", "failed", "cancelled"]
const cursorText = (cursor: unknown) => (typeof cursor === "string" ? cursor : null)

/** The cleaner's declared root, or its default, resolved once (a root spelled through a link is followed). */
const rooted = (
  name: string,
  declared: string | undefined,
  fallback: string | undefined,
  make: (root: ResolvedRoot) => CleanerRecord
): CleanerSlot => {
  const requested = declared ?? fallback
  if (requested === undefined)
    return { kind: "unavailable", name, status: "unavailable", reason: `${name} needs a root` }
  const resolved = resolveRoot(requested)
  return resolved.ok
    ? { kind: "ready", record: make(resolved.root) }
    : { kind: "unavailable", name, status: "root_unavailable", reason: `${requested}: ${resolved.reason}` }
}

const buildCaches = (ctx: CleanerContext, settings: NonNullable<DiskCleanupPolicy["cleaners"]["build_caches"]>) =>
  rooted("build_caches", settings.root, os.homedir(), (root) => {
    const minAgeMs = (settings.min_age_seconds ?? 86_400) * 1000
    return {
      name: "build_caches",
      root,
      reads: [],
      scan: (budget, cursor, guard) =>
        Effect.promise(() =>
          scanBuildCaches(
            {
              root: root.real,
              minAgeSeconds: minAgeMs / 1000,
              nowMs: ctx.nowMs,
              uid: ctx.uid,
              refused: guard.filter((p) => p.owner !== "build_caches"),
              budget,
              onProgress: ctx.onProgress
            },
            Array.isArray(cursor) ? (cursor as Array<string>) : []
          )
        ).pipe(Effect.map((scan) => ({ ...scan, cursor: scan.frontier.length > 0 ? scan.frontier : null }))),
      // Re-checked on the opened directory: the tag (signature, regular file, owner) and the age. A
      // resumed half-deleted cache was eligible when its deletion began; its mtime is the deletion's.
      removal: (candidate, nowMs) =>
        Effect.succeed({
          keepLast: "CACHEDIR.TAG",
          verify: (access, stat) => {
            const tag = fs.lstatSync(path.join(access, "CACHEDIR.TAG"), { throwIfNoEntry: false })
            if (tag === undefined || !tag.isFile()) return "tag_not_regular_file"
            if (tag.uid !== ctx.uid) return "tag_owned_by_other_user"
            const first = fs.readFileSync(path.join(access, "CACHEDIR.TAG"), "utf8").split(/\r?\n/)[0]
            if (first !== CACHEDIR_SIGNATURE) return "tag_signature_mismatch"
            if (candidate.resumed !== true && nowMs - stat.mtimeMs < minAgeMs) return "too_young"
            return undefined
          }
        })
    }
  })

const queueWorkdirs = (ctx: CleanerContext, settings: NonNullable<DiskCleanupPolicy["cleaners"]["queue_workdirs"]>) =>
  rooted("queue_workdirs", settings.root, undefined, (root) => ({
    name: "queue_workdirs",
    root,
    reads: [],
    scan: (budget, cursor) =>
      Effect.gen(function* () {
        const names = yield* Effect.sync(() => {
          try {
            return fs.readdirSync(root.real)
          } catch {
            return []
          }
        })
        const states = yield* ctx.statesOf(names)
        return scanQueueWorkdirs({
          root: root.real,
          minAgeSeconds: settings.min_age_seconds ?? 3600,
          nowMs: ctx.nowMs,
          stateOf: (id) => states.get(id),
          budget,
          cursor: cursorText(cursor)
        })
      }),
    // The job's state is read again just before deletion.
    removal: (candidate) =>
      Effect.map(ctx.statesOf([path.basename(candidate.path)]), (states) => {
        const state = states.get(path.basename(candidate.path))
        return state !== undefined && FINISHED.includes(state) ? {} : { refusal: `job_${state ?? "unknown"}` }
      })
  }))

const huggingfaceCache = (
  ctx: CleanerContext,
  settings: NonNullable<DiskCleanupPolicy["cleaners"]["huggingface_cache"]>
) =>
  rooted("huggingface_cache", settings.root, path.join(os.homedir(), ".cache", "huggingface", "hub"), (root) => {
    const minAgeMs = (settings.min_age_seconds ?? 86_400) * 1000
    return {
      name: "huggingface_cache",
      root,
      reads: [],
      scan: (budget, cursor) =>
        Effect.sync(() => {
          const found = scanHuggingfaceCache({
            root: root.real,
            minAgeSeconds: minAgeMs / 1000,
            nowMs: ctx.nowMs,
            deleteUnreferencedSnapshots: settings.delete_unreferenced_snapshots === true,
            budget,
            cursor: cursorText(cursor)
          })
          // Snapshots first: a blob only they used becomes a candidate in a later pass, once they are gone.
          const candidates = [...found.candidates].sort((a, b) =>
            a.reason === b.reason ? 0 : a.reason === "hf_unreferenced_snapshot" ? -1 : 1
          )
          return { ...found, candidates }
        }),
      // The references are read again just before each deletion.
      removal: (candidate, nowMs) =>
        Effect.sync(() =>
          stillHuggingfaceEligible(candidate, minAgeMs, nowMs) ? {} : { refusal: "referenced_or_changed" }
        )
    }
  })

const welesRecordings = (
  ctx: CleanerContext,
  settings: NonNullable<DiskCleanupPolicy["cleaners"]["weles_recordings"]>
) =>
  rooted("weles_recordings", settings.root, undefined, (root) => {
    const minAgeMs = (settings.min_age_seconds ?? 7 * 86_400) * 1000
    return {
      name: "weles_recordings",
      root,
      reads: [],
      scan: (budget, cursor) =>
        Effect.sync(() =>
          scanRecordings({
            root: root.real,
            minAgeSeconds: minAgeMs / 1000,
            nowMs: ctx.nowMs,
            budget,
            cursor: cursorText(cursor)
          })
        ),
      // Size and SHA-256 against the proof again, on the file as opened beneath the root.
      removal: (candidate, nowMs) =>
        Effect.succeed({
          companions: [`${path.basename(candidate.path)}${PROOF_SUFFIX}`],
          verify: (access) => recordingRefusal(access, minAgeMs, nowMs, path.basename(candidate.path))
        })
    }
  })

const backupTwins = (settings: NonNullable<DiskCleanupPolicy["cleaners"]["backup_twins"]>) => {
  const primary = typeof settings.primary_root === "string" ? settings.primary_root : undefined
  if (primary === undefined)
    return {
      kind: "unavailable",
      name: "backup_twins",
      status: "unavailable",
      reason: "backup_twins needs root and primary_root"
    } as const
  return rooted("backup_twins", settings.root, undefined, (root) => {
    const primaryReal = resolveRoot(primary)
    const primaryRoot = primaryReal.ok ? primaryReal.root.real : path.resolve(primary)
    return {
      name: "backup_twins",
      root,
      reads: [primary],
      scan: (budget, cursor) =>
        Effect.sync(() => scanBackupTwins({ replicaRoot: root.real, primaryRoot, cursor: cursorText(cursor), budget })),
      // The primary is compared with the replica as opened beneath the root.
      removal: (candidate) =>
        Effect.succeed({
          verify: (access) =>
            twinRefusal(
              access,
              path.join(primaryRoot, path.relative(root.real, candidate.path)),
              root.real,
              primaryRoot
            )
        })
    }
  })
}

const chromiumClones = (
  ctx: CleanerContext,
  settings: NonNullable<DiskCleanupPolicy["cleaners"]["chromium_clones"]>
) => {
  if (ctx.platform !== "darwin")
    return {
      kind: "unavailable",
      name: "chromium_clones",
      status: "not_applicable",
      reason: "only macOS makes code-sign clones"
    } as const
  return rooted("chromium_clones", settings.root, defaultCloneRoots()[0], (root) => {
    const minAgeMs = (settings.min_age_seconds ?? 86_400) * 1000
    return {
      name: "chromium_clones",
      root,
      reads: [],
      scan: (budget, cursor) =>
        Effect.sync(() =>
          scanChromiumClones({
            platform: ctx.platform,
            root: root.real,
            minAgeSeconds: minAgeMs / 1000,
            nowMs: ctx.nowMs,
            budget,
            cursor: cursorText(cursor)
          })
        ),
      removal: (_candidate, nowMs) =>
        Effect.succeed({ verify: (_access, stat) => (nowMs - stat.mtimeMs < minAgeMs ? "too_young" : undefined) })
    }
  })
}

const releaseStore = (ctx: CleanerContext, settings: NonNullable<DiskCleanupPolicy["cleaners"]["release_store"]>) => {
  const release = ctx.release
  if (release === undefined)
    return {
      kind: "unavailable",
      name: "release_store",
      status: "unavailable",
      reason: "no release evidence source: the registry or the object store could not be read"
    } as const
  if (settings.root === undefined)
    return {
      kind: "unavailable",
      name: "release_store",
      status: "unavailable",
      reason: "release_store needs a root"
    } as const
  const objectDir = resolveRoot(release.objectDir)
  const slot = rooted("release_store", settings.root, undefined, (root) => ({
    name: "release_store",
    root,
    reads: [],
    scan: (budget, cursor) =>
      scanReleaseStore({
        root: root.real,
        nowMs: ctx.nowMs,
        rules: {
          namedByHost: release.namedByHost,
          declared: release.declared,
          pinned: new Set(settings.pins ?? []),
          keepNewest: settings.keep_newest ?? 2,
          youngRunSeconds: settings.young_run_seconds ?? 86_400,
          minAgeSeconds: settings.min_age_seconds ?? 86_400
        },
        evidence: release.evidence,
        budget,
        cursor: cursorText(cursor)
      }),
    // Re-checked on the opened directory: still old enough (the evidence was read this pass).
    removal: (candidate, nowMs) =>
      Effect.succeed({
        verify: (_access, stat) =>
          candidate.resumed !== true && nowMs - stat.mtimeMs < (settings.min_age_seconds ?? 86_400) * 1000
            ? "too_young"
            : undefined
      })
  }))
  // Canonical payloads are the control plane's, immutable: no host pass deletes inside its object store.
  if (
    slot.kind === "ready" &&
    objectDir.ok &&
    (slot.record.root.real === objectDir.root.real ||
      slot.record.root.real.startsWith(`${objectDir.root.real}${path.sep}`))
  )
    return {
      kind: "unavailable",
      name: "release_store",
      status: "root_refused",
      reason: `${settings.root} is inside the control plane's object store (${objectDir.root.real}): canonical release payloads are never deleted by a cleaner`
    } as const
  return slot
}

/** The report fields a cleaner adds beside its part of `cleaners` (the seed's checkpoint fields). */
export interface CleanerReportFields {
  readonly build_caches_resume_from: ReadonlyArray<string> | null
  readonly backup_twins_cursor: string | null
}

/** What a cleaner's precondition may ask of the pass. */
export interface PassChecks {
  /** Why the host is not idle (jobs run on it, or nobody can tell), `needs` appended; undefined when idle. */
  readonly hostIdle: (needs: string) => Effect.Effect<string | undefined>
}

type CleanerName = (typeof CleanerNames)[number]
type Settings<K extends CleanerName> = NonNullable<DiskCleanupPolicy["cleaners"][K]>

/** One kind of cleaner: how the policy's settings become a record, and what it adds to the pass. */
export interface CleanerDefinition {
  readonly name: CleanerName
  /** Its slot when the policy configures it. */
  readonly slotFor: (ctx: CleanerContext) => CleanerSlot | undefined
  /** Why no pass may run while it is configured (asked after the gates, before the scan); undefined: go. */
  readonly precondition?: ((checks: PassChecks) => Effect.Effect<string | undefined>) | undefined
  /** Its own report fields, from its cursor after the scan (null when it is not configured or did not scan). */
  readonly summary?: ((cursor: unknown) => Partial<CleanerReportFields>) | undefined
}

const define = <K extends CleanerName>(
  name: K,
  make: (ctx: CleanerContext, settings: Settings<K>) => CleanerSlot,
  extra: Pick<CleanerDefinition, "precondition" | "summary"> = {}
): CleanerDefinition => ({
  name,
  slotFor: (ctx) => {
    const settings = ctx.policy.cleaners[name] as Settings<K> | undefined
    return settings === undefined ? undefined : make(ctx, settings)
  },
  ...extra
})

/** Every cleaner, in the seed's order (the order the pass scans and reports them in). */
export const CLEANERS: ReadonlyArray<CleanerDefinition> = [
  define("build_caches", buildCaches, {
    // queue_workdirs alone does not need the host idle: it only takes finished jobs' trees.
    precondition: (checks) => checks.hostIdle("build_caches needs the host idle"),
    summary: (cursor) => ({
      build_caches_resume_from: Array.isArray(cursor) && cursor.length > 0 ? (cursor as Array<string>) : null
    })
  }),
  define("huggingface_cache", huggingfaceCache),
  define("weles_recordings", welesRecordings),
  define("chromium_clones", chromiumClones),
  define("queue_workdirs", queueWorkdirs),
  define("backup_twins", (_ctx, settings) => backupTwins(settings), {
    summary: (cursor) => ({ backup_twins_cursor: typeof cursor === "string" ? cursor : null })
  }),
  define("release_store", releaseStore)
]

/**
 * The policy's cleaners as records the pass iterates, in the seed's order; a cleaner that cannot run says why.
 */
export const cleanerSlots = (ctx: CleanerContext): ReadonlyArray<CleanerSlot> =>
  CLEANERS.flatMap((cleaner) => {
    const slot = cleaner.slotFor(ctx)
    return slot === undefined ? [] : [slot]
  })

/** The first configured cleaner's reason the pass may not run now, or undefined. */
export const preconditionRefusal = (policy: DiskCleanupPolicy, checks: PassChecks) =>
  Effect.gen(function* () {
    for (const cleaner of CLEANERS) {
      if (cleaner.precondition === undefined || policy.cleaners[cleaner.name] === undefined) continue
      const refusal = yield* cleaner.precondition(checks)
      if (refusal !== undefined) return refusal
    }
    return undefined
  })

/** Every cleaner's own report fields, from the cursors the scan left (a cleaner without one reports null). */
export const cleanerReportFields = (cursors: Readonly<Record<string, unknown>>): CleanerReportFields =>
  // Every summary answers for a missing cursor too, so each field is present, in the cleaners' order.
  Object.assign({}, ...CLEANERS.map((cleaner) => cleaner.summary?.(cursors[cleaner.name] ?? null) ?? {}))
