import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Clock, Config, Effect, Option } from "effect"
import { AppConfig } from "../../platform/AppConfig.js"
import { sha256Hex } from "../../platform/Digest.js"
import { writeFileAtomically } from "../../platform/Files.js"
import { packageVersion } from "../../platform/Package.js"
import { thisHostName } from "../Channels.js"
import { JobQueue } from "../jobs/JobQueue.js"
import { FleetRegistry } from "../registry/Registry.js"
import { CleanerNames, type DiskCleanupPolicy } from "../registry/Schema.js"
import { scanBackupTwins, twinRefusal } from "./BackupTwins.js"
import { type BuildCacheScan, CACHEDIR_SIGNATURE, type Candidate, scanBuildCaches } from "./BuildCaches.js"
import { defaultCloneRoots, scanChromiumClones } from "./ChromiumClones.js"
import { DiskMeter } from "./DiskMeter.js"
import { scanHuggingfaceCache, stillHuggingfaceEligible } from "./HuggingfaceCache.js"
import { acquireLock } from "./JanitorLock.js"
import { scanQueueWorkdirs } from "./QueueWorkdirs.js"
import { PROOF_SUFFIX, recordingRefusal, scanRecordings } from "./Recordings.js"

export type Outcome =
  | "never_run"
  | "invalid_or_unavailable_policy"
  | "lock_busy"
  | "interval_noop"
  | "healthy_noop"
  | "report_only"
  | "lock_recovery_report_only"
  | "blocked_running_jobs"
  | "reclaimed_target"
  | "reclaimed_progress"
  | "cap_reached"
  | "partial_error"
  | "no_eligible_items"

export type Writer = "watch" | "queue-agent" | "cli"

const GIB = 1024 ** 3
const DEFAULT_PASS_SECONDS = 30

/** A cleaner's part of the report: what it scanned, its candidates, its skips counted by reason (and the first 200). */
const summarize = (
  found: {
    readonly candidates: ReadonlyArray<Candidate>
    readonly skipped: ReadonlyArray<{ readonly path: string; readonly reason: string }>
    readonly scanned: number
  },
  root: string
) => {
  const counts: Record<string, number> = {}
  for (const skip of found.skipped) counts[skip.reason] = (counts[skip.reason] ?? 0) + 1
  return {
    root,
    scanned: found.scanned,
    candidates: found.candidates,
    skipped_counts: counts,
    skipped: found.skipped.slice(0, 200)
  }
}

/** What a host without a declared policy gets: a report, never a deletion. */
export const REPORTING_DEFAULT: DiskCleanupPolicy = {
  mode: "report",
  check_interval_seconds: 3600,
  low_free_gb: 10,
  target_free_gb: 20,
  max_items_per_pass: 1000,
  max_bytes_per_pass: 100 * GIB,
  max_scan_items: 200_000,
  cleaners: { build_caches: { min_age_seconds: 7 * 86_400 } }
}

export interface CleanupReport {
  readonly writer: Writer
  readonly writer_version: string
  readonly reason: string | null
  readonly host: string
  readonly outcome: Outcome
  readonly detail: string | null
  readonly mode: DiskCleanupPolicy["mode"] | null
  readonly dry_run: boolean
  readonly started_at: string
  readonly finished_at: string
  readonly free_bytes_before: number | null
  readonly free_bytes_after: number | null
  readonly low_free_gb: number | null
  readonly target_free_gb: number | null
  readonly caps: ReadonlyArray<"max_items_per_pass" | "max_bytes_per_pass" | "max_scan_items" | "max_pass_seconds">
  readonly deleted: ReadonlyArray<{ readonly path: string; readonly bytes: number }>
  readonly deleted_bytes: number
  readonly errors: ReadonlyArray<{ readonly path: string; readonly error: string }>
  readonly cleaners: Record<string, unknown>
  readonly build_caches_resume_from: ReadonlyArray<string> | null
  readonly backup_twins_cursor: string | null
}

interface JanitorState {
  readonly last_pass_at: number | null
  readonly report: CleanupReport | null
  /** An unfinished pressure pass keeps its goal until the target is free. */
  readonly goal: { readonly target_free_gb: number; readonly since: number } | null
  readonly checkpoints: {
    readonly policy_digest: string
    readonly root: string
    readonly build_caches: ReadonlyArray<string>
  } | null
  /** Where the backup-twins walk resumes (a relative path), null when the last walk completed. */
  readonly twins_cursor?: string | null
}

const EMPTY_STATE: JanitorState = { last_pass_at: null, report: null, goal: null, checkpoints: null }

/**
 * The disk janitor: one pass function, one lock, one state file, for both writers. A pass measures
 * free space, gates on interval and watermark, scans the policy's cleaners within budgets, and deletes
 * only in `enforce` mode, only what a cleaner proved eligible, until the target is free.
 */
export class Janitor extends Effect.Service<Janitor>()("fleet/Janitor", {
  effect: Effect.gen(function* () {
    const app = yield* AppConfig
    const registry = yield* FleetRegistry
    const meter = yield* DiskMeter
    const queue = yield* JobQueue
    const stateDir = path.resolve(
      yield* Config.string("KEEL_JANITOR_STATE_DIR").pipe(Config.withDefault(path.join(app.dataDir, "janitor")))
    )
    const hostName = yield* thisHostName
    // A diagnostic knob for lock tests and demos: hold the lock this long before scanning.
    const holdMs = yield* Config.integer("KEEL_JANITOR_HOLD_MS").pipe(Config.withDefault(0))
    const stateFile = path.join(stateDir, "state.json")

    const readState = (): JanitorState => {
      try {
        return { ...EMPTY_STATE, ...(JSON.parse(fs.readFileSync(stateFile, "utf8")) as JanitorState) }
      } catch {
        return EMPTY_STATE
      }
    }

    /** The host's policy: its declaration, the reporting default when it has none, or why neither. */
    const policyFor = (host: string) =>
      Effect.gen(function* () {
        const snapshot = yield* registry.read({ allowCached: true, record: false }).pipe(Effect.either)
        if (snapshot._tag === "Left") {
          // No registry at all: a local host still gets the reporting default.
          return snapshot.left._tag === "FleetRegistryUnavailable"
            ? ({ ok: true, policy: REPORTING_DEFAULT, declared: false } as const)
            : ({ ok: false, why: snapshot.left.detail } as const)
        }
        const target = snapshot.right.registry.targets.find((t) => t.name === host)
        return target?.disk_cleanup === undefined
          ? ({ ok: true, policy: REPORTING_DEFAULT, declared: false } as const)
          : ({ ok: true, policy: target.disk_cleanup, declared: true } as const)
      })
    const policyOf = policyFor(hostName)

    const refusedDirs = (policy: DiskCleanupPolicy) => {
      const home = os.homedir()
      const refused = [
        { path: stateDir, why: "janitor_state" },
        { path: path.join(home, ".cache", "huggingface", "hub"), why: "model_hub" },
        { path: path.join(process.env.CARGO_HOME ?? path.join(home, ".cargo"), "registry"), why: "package_registry" }
      ]
      const hub = policy.cleaners.huggingface_cache?.root
      if (hub !== undefined) refused.push({ path: hub, why: "huggingface_cache_root" })
      const recordings = policy.cleaners.weles_recordings?.root
      if (recordings !== undefined) refused.push({ path: recordings, why: "weles_recordings_root" })
      return refused.map((r) => ({ ...r, path: path.resolve(r.path) }))
    }

    /** Deletion re-checks what made the directory eligible: the scan's verdict is not trusted blindly. */
    const stillEligible = (candidate: Candidate, minAgeMs: number, now: number) => {
      try {
        const dir = fs.lstatSync(candidate.path)
        const tag = fs.lstatSync(path.join(candidate.path, "CACHEDIR.TAG"))
        const first = fs.readFileSync(path.join(candidate.path, "CACHEDIR.TAG"), "utf8").split(/\r?\n/)[0]
        return (
          dir.isDirectory() &&
          tag.isFile() &&
          tag.uid === process.getuid?.() &&
          first === CACHEDIR_SIGNATURE &&
          now - dir.mtimeMs >= minAgeMs
        )
      } catch {
        return false
      }
    }

    const pass = Effect.fn("Janitor.pass")(function* (options: {
      readonly writer: Writer
      readonly dryRun?: boolean
      /** An explicit cleanup-to-target request: no interval or watermark gate. */
      readonly toTarget?: boolean
      /** Why an operator asked (`ctl space reclaim --apply --reason`), recorded with the pass. */
      readonly reason?: string | undefined
      /** Called as the scan advances (for a progress line on a terminal). */
      readonly onProgress?: ((scanned: number) => void) | undefined
    }) {
      const started = yield* Clock.currentTimeMillis
      const dryRun = options.dryRun === true
      const state = readState()
      const base = {
        writer: options.writer,
        writer_version: packageVersion(),
        reason: options.reason ?? null,
        host: hostName,
        dry_run: dryRun,
        started_at: new Date(started).toISOString(),
        caps: [] as Array<CleanupReport["caps"][number]>,
        deleted: [] as Array<{ path: string; bytes: number }>,
        errors: [] as Array<{ path: string; error: string }>,
        cleaners: {} as Record<string, unknown>,
        build_caches_resume_from: null as ReadonlyArray<string> | null,
        backup_twins_cursor: null as string | null
      }
      const finish = (
        outcome: Outcome,
        extra: Partial<CleanupReport> & {
          policy?: DiskCleanupPolicy
          freeBefore?: number | null
          freeAfter?: number | null
        }
      ) =>
        Effect.gen(function* () {
          const finished = yield* Clock.currentTimeMillis
          const { freeAfter, freeBefore, policy, ...rest } = extra
          const report: CleanupReport = {
            ...base,
            outcome,
            detail: null,
            mode: policy?.mode ?? null,
            finished_at: new Date(finished).toISOString(),
            free_bytes_before: freeBefore ?? null,
            free_bytes_after: freeAfter ?? null,
            low_free_gb: policy?.low_free_gb ?? null,
            target_free_gb: policy?.target_free_gb ?? null,
            deleted_bytes: base.deleted.reduce((sum, d) => sum + d.bytes, 0),
            ...rest
          }
          return report
        })
      const persist = (report: CleanupReport, next: Partial<JanitorState>) =>
        Effect.sync(() => {
          if (!dryRun) writeFileAtomically(stateFile, `${JSON.stringify({ ...state, ...next, report }, null, 2)}\n`)
          return report
        })

      const policyRead = yield* policyOf
      if (!policyRead.ok) {
        const report = yield* finish("invalid_or_unavailable_policy", { detail: policyRead.why })
        return yield* persist(report, {})
      }
      const policy = policyRead.policy
      const passSeconds = policy.max_pass_seconds ?? DEFAULT_PASS_SECONDS

      const lock = dryRun ? undefined : acquireLock(stateDir, passSeconds * 2_000 + 5_000, started)
      if (lock?.kind === "busy") {
        // The state file belongs to the holder; a busy pass only answers.
        return yield* finish("lock_busy", { policy, detail: `pass ${lock.holder.pid} holds the lock` })
      }
      const heartbeat = lock === undefined ? undefined : setInterval(() => lock.beat(), 1_000).unref()
      return yield* Effect.gen(function* () {
        if (holdMs > 0) yield* Effect.sleep(holdMs)
        const measureRoot = policy.cleaners.build_caches?.root ?? os.homedir()
        const freeBefore = yield* meter.available(measureRoot).pipe(Effect.option)
        const free = Option.getOrNull(freeBefore)
        const pressure = free !== null && free < policy.low_free_gb * GIB
        const pursuing = state.goal !== null
        const gated = options.toTarget !== true && !pursuing
        if (
          gated &&
          state.last_pass_at !== null &&
          started - state.last_pass_at < policy.check_interval_seconds * 1000 &&
          !pressure
        ) {
          return yield* finish("interval_noop", { policy, freeBefore: free })
        }
        if (gated && !pressure) {
          const report = yield* finish("healthy_noop", { policy, freeBefore: free })
          return yield* persist(report, { last_pass_at: started })
        }
        if (policy.mode === "off") {
          const report = yield* finish("report_only", { policy, freeBefore: free, detail: "mode off: nothing scanned" })
          return yield* persist(report, { last_pass_at: started })
        }
        const running = (yield* queue.usage(0)).get(hostName)?.running ?? 0
        if (running > 0 && policy.cleaners.build_caches !== undefined) {
          // queue_workdirs alone does not need the host idle: it only takes finished jobs' trees.
          const report = yield* finish("blocked_running_jobs", {
            policy,
            freeBefore: free,
            detail: `${running} job(s) running on ${hostName}; build_caches needs the host idle`
          })
          return yield* persist(report, { last_pass_at: started })
        }

        // Scan: build_caches (the cleaners not built yet are reported as such, never as empty).
        const build = policy.cleaners.build_caches
        const root = path.resolve(build?.root ?? os.homedir())
        const digest = sha256Hex(JSON.stringify(policy))
        const checkpoint =
          state.checkpoints !== null && state.checkpoints.policy_digest === digest && state.checkpoints.root === root
            ? state.checkpoints.build_caches
            : []
        let scan: BuildCacheScan | undefined
        if (build !== undefined) {
          scan = yield* Effect.promise(() =>
            scanBuildCaches(
              {
                root,
                minAgeSeconds: build.min_age_seconds ?? 86_400,
                nowMs: started,
                uid: process.getuid?.() ?? 0,
                refused: refusedDirs(policy),
                maxScanItems: policy.max_scan_items,
                onProgress: options.onProgress
              },
              checkpoint
            ).catch((error: Error) => ({
              candidates: [],
              skipped: [{ path: root, reason: `unreadable: ${error.message}` }],
              scanned: 0,
              frontier: []
            }))
          )
          base.cleaners.build_caches = summarize(scan, root)
          if (scan.frontier.length > 0) {
            base.caps.push("max_scan_items")
            base.build_caches_resume_from = scan.frontier
          }
        }
        const workdirs = policy.cleaners.queue_workdirs
        let workdirCandidates: ReadonlyArray<Candidate> = []
        if (workdirs !== undefined) {
          const workRoot = workdirs.root
          if (workRoot === undefined) {
            base.cleaners.queue_workdirs = { status: "unavailable", reason: "queue_workdirs needs a root" }
          } else {
            const names = yield* Effect.sync(() => {
              try {
                return fs.readdirSync(workRoot)
              } catch {
                return []
              }
            })
            const states = yield* queue.statesOf(names)
            const found = scanQueueWorkdirs({
              root: path.resolve(workRoot),
              minAgeSeconds: workdirs.min_age_seconds ?? 3600,
              nowMs: started,
              stateOf: (id) => states.get(id)
            })
            base.cleaners.queue_workdirs = summarize(found, workRoot)
            workdirCandidates = found.candidates
          }
        }
        const hub = policy.cleaners.huggingface_cache
        let hubCandidates: ReadonlyArray<Candidate> = []
        if (hub !== undefined) {
          const hubRoot = path.resolve(hub.root ?? path.join(os.homedir(), ".cache", "huggingface", "hub"))
          const found = scanHuggingfaceCache({
            root: hubRoot,
            minAgeSeconds: hub.min_age_seconds ?? 86_400,
            nowMs: started,
            deleteUnreferencedSnapshots: hub.delete_unreferenced_snapshots === true
          })
          base.cleaners.huggingface_cache = summarize(found, hubRoot)
          // Snapshots first: a blob only they used becomes a candidate in a later pass, once they are gone.
          hubCandidates = [...found.candidates].sort((a, b) =>
            a.reason === b.reason ? 0 : a.reason === "hf_unreferenced_snapshot" ? -1 : 1
          )
        }
        const recordings = policy.cleaners.weles_recordings
        let recordingCandidates: ReadonlyArray<Candidate> = []
        if (recordings !== undefined) {
          if (recordings.root === undefined) {
            base.cleaners.weles_recordings = { status: "unavailable", reason: "weles_recordings needs a root" }
          } else {
            const found = scanRecordings({
              root: path.resolve(recordings.root),
              minAgeSeconds: recordings.min_age_seconds ?? 7 * 86_400,
              nowMs: started
            })
            base.cleaners.weles_recordings = summarize(found, recordings.root)
            recordingCandidates = found.candidates
          }
        }
        const twins = policy.cleaners.backup_twins
        let twinCandidates: ReadonlyArray<Candidate> = []
        let twinsCursor: string | null = null
        if (twins !== undefined) {
          const primary = typeof twins.primary_root === "string" ? twins.primary_root : undefined
          if (twins.root === undefined || primary === undefined) {
            base.cleaners.backup_twins = { status: "unavailable", reason: "backup_twins needs root and primary_root" }
          } else {
            const found = scanBackupTwins({
              replicaRoot: path.resolve(twins.root),
              primaryRoot: path.resolve(primary),
              cursor: state.twins_cursor ?? null,
              maxItems: policy.max_scan_items
            })
            base.cleaners.backup_twins = summarize(found, twins.root)
            twinCandidates = found.candidates
            twinsCursor = found.next
            base.backup_twins_cursor = found.next
            if (found.next !== null && !base.caps.includes("max_scan_items")) base.caps.push("max_scan_items")
          }
        }
        const clones = policy.cleaners.chromium_clones
        let cloneCandidates: ReadonlyArray<Candidate> = []
        if (clones !== undefined) {
          const found = scanChromiumClones({
            platform: process.platform,
            roots: clones.root === undefined ? defaultCloneRoots() : [clones.root],
            minAgeSeconds: clones.min_age_seconds ?? 86_400,
            nowMs: started
          })
          base.cleaners.chromium_clones = found.applicable
            ? summarize(found, clones.root ?? defaultCloneRoots()[0]!)
            : { status: "not_applicable", reason: "only macOS makes code-sign clones", candidates: [] }
          cloneCandidates = found.candidates
        }
        // The release pipeline's cleaner keeps its slot in every report until it is built with that pipeline.
        base.cleaners.release_store = {
          status: "unavailable",
          reason: "release_store comes with the release pipeline",
          skipped: {}
        }
        for (const name of Object.keys(policy.cleaners)) {
          if (
            name !== "release_store" &&
            name !== "build_caches" &&
            name !== "queue_workdirs" &&
            name !== "huggingface_cache" &&
            name !== "weles_recordings" &&
            name !== "backup_twins" &&
            name !== "chromium_clones"
          )
            base.cleaners[name] = { status: "unavailable", reason: "this cleaner is not built yet" }
        }
        const checkpoints =
          scan !== undefined && scan.frontier.length > 0
            ? { policy_digest: digest, root, build_caches: scan.frontier }
            : null
        const candidates = [
          ...(scan?.candidates ?? []),
          ...workdirCandidates,
          ...hubCandidates,
          ...recordingCandidates,
          ...twinCandidates,
          ...cloneCandidates
        ]

        const reportOnly =
          lock?.kind === "recovery"
            ? "lock_recovery_report_only"
            : policy.mode !== "enforce" || dryRun
              ? "report_only"
              : undefined
        if (reportOnly !== undefined) {
          const report = yield* finish(reportOnly, {
            policy,
            freeBefore: free,
            detail:
              lock?.kind === "recovery"
                ? `the retired lock holder ${lock.predecessor} still runs: nothing deleted until it is gone`
                : null
          })
          return yield* persist(report, { last_pass_at: started, checkpoints, twins_cursor: twinsCursor })
        }
        if (candidates.length === 0) {
          const report = yield* finish(base.caps.length > 0 ? "cap_reached" : "no_eligible_items", {
            policy,
            freeBefore: free
          })
          return yield* persist(report, { last_pass_at: started, checkpoints, twins_cursor: twinsCursor })
        }

        // Delete, oldest budgets first: items, bytes, seconds; stop once the target is free.
        const targetBytes = policy.target_free_gb * GIB
        let reachedTarget = false
        for (const candidate of candidates) {
          const now = yield* Clock.currentTimeMillis
          const current = yield* meter.available(root).pipe(Effect.option)
          if (Option.isSome(current) && current.value >= targetBytes) {
            reachedTarget = true
            break
          }
          if (base.deleted.length >= policy.max_items_per_pass) {
            base.caps.push("max_items_per_pass")
            break
          }
          if (base.deleted.reduce((s, d) => s + d.bytes, 0) + candidate.bytes > policy.max_bytes_per_pass) {
            base.caps.push("max_bytes_per_pass")
            break
          }
          if (now - started > passSeconds * 1000) {
            base.caps.push("max_pass_seconds")
            break
          }
          const eligible =
            candidate.reason === "code_sign_clone"
              ? (() => {
                  try {
                    return now - fs.lstatSync(candidate.path).mtimeMs >= (clones?.min_age_seconds ?? 86_400) * 1000
                  } catch {
                    return false
                  }
                })()
              : candidate.reason === "recording_uploaded"
                ? recordingRefusal(candidate.path, (recordings?.min_age_seconds ?? 7 * 86_400) * 1000, now) ===
                  undefined
                : candidate.reason === "twin_in_primary"
                  ? twinRefusal(
                      candidate.path,
                      path.join(
                        path.resolve(String(twins?.primary_root ?? "")),
                        path.relative(path.resolve(twins?.root ?? "/"), candidate.path)
                      )
                    ) === undefined
                  : candidate.reason.startsWith("hf_")
                    ? stillHuggingfaceEligible(candidate, (hub?.min_age_seconds ?? 86_400) * 1000, now)
                    : candidate.reason.startsWith("job_")
                      ? ["succeeded", "failed", "cancelled"].includes(
                          (yield* queue.statesOf([path.basename(candidate.path)])).get(path.basename(candidate.path)) ??
                            ""
                        )
                      : stillEligible(candidate, (build?.min_age_seconds ?? 86_400) * 1000, now)
          if (!eligible) {
            base.errors.push({ path: candidate.path, error: "no longer eligible at deletion time; kept" })
            continue
          }
          const removed = yield* Effect.tryPromise(async () => {
            await fs.promises.rm(candidate.path, { recursive: true })
            if (candidate.reason === "recording_uploaded")
              await fs.promises.rm(`${candidate.path}${PROOF_SUFFIX}`, { force: true })
          }).pipe(Effect.either)
          if (removed._tag === "Left") base.errors.push({ path: candidate.path, error: String(removed.left.error) })
          else base.deleted.push({ path: candidate.path, bytes: candidate.bytes })
        }
        const freeAfter = Option.getOrNull(yield* meter.available(root).pipe(Effect.option))
        if (freeAfter !== null && freeAfter >= targetBytes) reachedTarget = true
        const outcome: Outcome = reachedTarget
          ? "reclaimed_target"
          : base.errors.length > 0
            ? "partial_error"
            : base.caps.length > 0
              ? "cap_reached"
              : base.deleted.length > 0
                ? "reclaimed_progress"
                : "no_eligible_items"
        const report = yield* finish(outcome, { policy, freeBefore: free, freeAfter })
        const goal = reachedTarget
          ? null
          : pressure || pursuing
            ? { target_free_gb: policy.target_free_gb, since: state.goal?.since ?? started }
            : null
        return yield* persist(report, { last_pass_at: started, checkpoints, goal, twins_cursor: twinsCursor })
      }).pipe(
        Effect.ensuring(
          Effect.sync(() => {
            if (heartbeat !== undefined) clearInterval(heartbeat)
            lock?.release()
          })
        )
      )
    })

    /** The last recorded pass, or `never_run`. */
    const lastReport = Effect.sync(() => readState().report)

    /** A target's cleaners: which its policy (or the reporting default) configures, and which are built. */
    const cleaners = (host: string) =>
      Effect.map(policyFor(host), (read) => {
        const policy = read.ok ? read.policy : REPORTING_DEFAULT
        return {
          target: host,
          mode: policy.mode,
          declared: read.ok && read.declared,
          cleaners: CleanerNames.map((name) => ({
            name,
            configured: policy.cleaners[name] !== undefined,
            settings: policy.cleaners[name] ?? null,
            available: name !== "release_store"
          }))
        }
      })

    return { pass, lastReport, cleaners, stateDir, host: hostName } as const
  })
}) {}
