import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Config, Effect, Option } from "effect"
import { AppConfig, thisHostName } from "../../platform/AppConfig.js"
import { sha256Hex } from "../../platform/Digest.js"
import { writeFileAtomically } from "../../platform/Files.js"
import { ObjectStore } from "../../platform/objects/ObjectStore.js"
import { packageVersion } from "../../platform/Package.js"
import { JobQueue } from "../jobs/JobQueue.js"
import { runningJobsOn } from "../jobs/JobsApiClient.js"
import { configuredAccess, configuredObjectApiClient } from "../objects/ObjectApiClient.js"
import { FleetRegistry } from "../registry/Registry.js"
import { CleanerNames, type DiskCleanupPolicy, type FleetRegistryDocument } from "../registry/Schema.js"
import { unitEnvironment } from "../UnitSettings.js"
import type { Candidate } from "./BuildCaches.js"
import { type CleanerRecord, type CleanerSlot, cleanerSlots } from "./Cleaners.js"
import { DiskMeter } from "./DiskMeter.js"
import { acquireLock } from "./JanitorLock.js"
import { protect, protectedIdsFor, protectionRefusal } from "./Protection.js"
import type { ReleaseEvidenceSource } from "./ReleaseStore.js"
import { mountPoints, realPathOf, removeBeneath, surveyPath } from "./SafeRemove.js"
import { scanBudget } from "./ScanBudget.js"

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

/** The seed's two writers: the watch unit (its timer, or run by hand) and the queue agent on each tick. */
export type Writer = "watch" | "queue-agent"
/** What started the pass: the watch unit's timer, the agent's tick, an operator by hand, a reclaim request. */
export type Trigger = "timer" | "tick" | "manual" | "reclaim"

type Cap = "max_items_per_pass" | "max_bytes_per_pass" | "max_scan_items" | "max_pass_seconds"

const GIB = 1024 ** 3
const DEFAULT_PASS_SECONDS = 30

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

/** Where the pass's policy came from. */
export interface PolicySource {
  readonly target: string
  /** file, git or bundled registry; `default` is the built-in reporting default for a declared target. */
  readonly kind: "file" | "git" | "bundled" | "none"
  readonly location: string | null
  readonly freshness: "current" | "cached" | "bundled" | null
  readonly declared: boolean
}

/** One filesystem the pass cleans: the roots on it and its free space before and after. */
export interface FilesystemReport {
  readonly roots: ReadonlyArray<string>
  readonly free_bytes_before: number | null
  readonly free_bytes_after: number | null
  readonly reached_target: boolean
}

export interface CleanupReport {
  readonly writer: Writer
  readonly trigger: Trigger
  readonly writer_version: string
  readonly reason: string | null
  readonly host: string
  readonly policy_source: PolicySource | null
  readonly outcome: Outcome
  readonly detail: string | null
  readonly mode: DiskCleanupPolicy["mode"] | null
  readonly dry_run: boolean
  readonly started_at: string
  readonly finished_at: string
  /** The tightest of the cleaned filesystems (least free), before and after. */
  readonly free_bytes_before: number | null
  readonly free_bytes_after: number | null
  readonly filesystems: ReadonlyArray<FilesystemReport>
  readonly low_free_gb: number | null
  readonly target_free_gb: number | null
  readonly caps: ReadonlyArray<Cap>
  readonly scanned: number
  readonly deleted: ReadonlyArray<{ readonly path: string; readonly bytes: number; readonly cleaner: string }>
  readonly deleted_bytes: number
  readonly errors: ReadonlyArray<{ readonly path: string; readonly error: string }>
  readonly cleaners: Record<string, unknown>
  readonly build_caches_resume_from: ReadonlyArray<string> | null
  readonly backup_twins_cursor: string | null
}

/** A directory candidate whose removal began: the next pass finishes it first (its tag is still there). */
interface PendingRemoval {
  readonly cleaner: string
  readonly path: string
  readonly dev: number
  readonly ino: number
  readonly reason: string
}

interface JanitorState {
  readonly last_pass_at: number | null
  readonly report: CleanupReport | null
  /** An unfinished pressure pass keeps its goal until the target is free. */
  readonly goal: { readonly target_free_gb: number; readonly since: number } | null
  /** Per-cleaner cursors, valid for one policy and the roots it resolved to; `next` resumes first. */
  readonly checkpoints: {
    readonly policy_digest: string
    readonly roots: Record<string, string>
    readonly cursors: Record<string, unknown>
    readonly next: string | null
  } | null
  readonly pending?: ReadonlyArray<PendingRemoval>
}

const EMPTY_STATE: JanitorState = { last_pass_at: null, report: null, goal: null, checkpoints: null, pending: [] }

export interface PassOptions {
  readonly writer: Writer
  readonly trigger?: Trigger | undefined
  readonly dryRun?: boolean
  /** An explicit cleanup-to-target request: no interval or watermark gate. */
  readonly toTarget?: boolean
  /** Why an operator asked (`ctl space reclaim --apply --reason`), recorded with the pass. */
  readonly reason?: string | undefined
  /** Called as the scan advances (for a progress line on a terminal). */
  readonly onProgress?: ((scanned: number) => void) | undefined
  /** Test seam: runs after each candidate is handled, before the next (to mutate the tree mid-pass). */
  readonly afterCandidate?: ((candidate: Candidate) => Promise<void> | void) | undefined
}

/** A cleaner's part of the report: its root (as declared and as resolved), scan counts, candidates, skips. */
const summarize = (
  record: CleanerRecord,
  found: {
    readonly candidates: ReadonlyArray<Candidate>
    readonly skipped: ReadonlyArray<{ path: string; reason: string }>
    readonly scanned: number
  },
  complete: boolean
) => {
  const counts: Record<string, number> = {}
  for (const skip of found.skipped) counts[skip.reason] = (counts[skip.reason] ?? 0) + 1
  return {
    status: complete ? "scanned" : "partial",
    root: record.root.real,
    root_declared: record.root.requested,
    root_resolved_from: record.root.requested === record.root.real ? null : record.root.requested,
    scanned: found.scanned,
    candidates: found.candidates.map(({ bytes, path, reason }) => ({ path, bytes, reason })),
    skipped_counts: counts,
    skipped: found.skipped.slice(0, 200)
  }
}

/**
 * The disk janitor: one pass function, one lock, one state file, for both writers. A pass measures
 * the free space of the filesystems it cleans, gates on interval and watermark, scans the policy's
 * cleaners within one pass budget, and deletes only in `enforce` mode, only what a cleaner proved
 * eligible and nothing protected, through handles that never follow a link, until the target is free.
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
    const objectDir = yield* Config.string("KEEL_OBJECT_DIR").pipe(
      Config.withDefault(path.join(app.dataDir, "objects"))
    )
    const vaultKeyFile = yield* Config.string("KEEL_VAULT_KEY_FILE").pipe(
      Config.withDefault(path.join(app.dataDir, "vault.key"))
    )
    const hostName = yield* thisHostName
    // A host that reports to a control plane elsewhere does not hold the jobs that run on it.
    const controlPlane = yield* Config.option(Config.string("KEEL_CONTROL_PLANE_URL"))
    const localObjects = yield* Effect.serviceOption(ObjectStore)
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

    /**
     * The host's policy: its declaration, the reporting default for a target that declares none, or why
     * neither (no readable registry, or no target of that name: never silently the default).
     */
    const policyFor = (host: string) =>
      Effect.gen(function* () {
        // A current read only: deleting on the strength of a remembered registry is not a risk worth taking.
        const snapshot = yield* registry.read({ record: false }).pipe(Effect.either)
        if (snapshot._tag === "Left") return { ok: false, why: snapshot.left.detail } as const
        const { freshness, registry: document, source } = snapshot.right
        const target = document.targets.find((t) => t.name === host)
        if (target === undefined)
          return {
            ok: false,
            why: `${host} is not a target of the registry (${source.location}); set KEEL_HOST to this host's target name`
          } as const
        const policySource: PolicySource = {
          target: host,
          kind: source.kind,
          location: source.location,
          freshness,
          declared: target.disk_cleanup !== undefined
        }
        return {
          ok: true,
          policy: target.disk_cleanup ?? REPORTING_DEFAULT,
          source: policySource,
          document
        } as const
      })

    /** Everything no cleaner may delete, contain or (for the build-cache walk) enter. */
    const protectedPaths = (
      policy: DiskCleanupPolicy,
      slots: ReadonlyArray<CleanerSlot>,
      running: ReadonlyArray<string>
    ) => {
      const home = os.homedir()
      const entries: Array<{ path: string; why: string; owner?: string }> = [
        { path: stateDir, why: "janitor_state" },
        { path: app.dataDir, why: "data_dir" },
        { path: objectDir, why: "object_store" },
        { path: vaultKeyFile, why: "vault" },
        { path: path.join(home, ".cache", "huggingface", "hub"), why: "model_hub", owner: "huggingface_cache" },
        { path: path.join(process.env.CARGO_HOME ?? path.join(home, ".cargo"), "registry"), why: "package_registry" }
      ]
      // SQLite's companions hold committed writes too (WAL) or the lock state of every connection (shm).
      if (app.databaseFile !== ":memory:") {
        // SQLite puts them beside the file it opens: the link's target when the configured path is a symlink.
        const opened = realPathOf(app.databaseFile)
        for (const base of new Set([app.databaseFile, opened]))
          for (const suffix of ["", "-wal", "-shm", "-journal"])
            entries.push({ path: `${base}${suffix}`, why: "database" })
      }
      // Declared roots of every cleaner, whether or not it can run now.
      for (const [name, settings] of Object.entries(policy.cleaners)) {
        if (settings?.root !== undefined) entries.push({ path: settings.root, why: `${name}_root`, owner: name })
      }
      for (const slot of slots) {
        if (slot.kind !== "ready") continue
        entries.push({ path: slot.record.root.real, why: `${slot.record.name}_root`, owner: slot.record.name })
        for (const read of slot.record.reads) entries.push({ path: read, why: `${slot.record.name}_primary` })
      }
      const workRoot = policy.cleaners.queue_workdirs?.root
      if (workRoot !== undefined)
        for (const id of running) entries.push({ path: path.join(workRoot, id), why: "running_job" })
      return protect(entries)
    }

    /** Free space per filesystem the ready cleaners' roots live on (grouped by device). */
    const measure = (records: ReadonlyArray<CleanerRecord>) =>
      Effect.gen(function* () {
        const byDevice = new Map<number, Array<string>>()
        for (const record of records)
          byDevice.set(record.root.dev, [...(byDevice.get(record.root.dev) ?? []), record.root.real])
        const free = new Map<number, number | null>()
        for (const [dev, roots] of byDevice)
          free.set(dev, Option.getOrNull(yield* meter.available(roots[0]!).pipe(Effect.option)))
        return { byDevice, free }
      })

    const pass = Effect.fn("Janitor.pass")(function* (options: PassOptions) {
      const started = Date.now()
      const dryRun = options.dryRun === true
      const state = readState()
      const base = {
        writer: options.writer,
        trigger: options.trigger ?? (options.writer === "queue-agent" ? "tick" : "manual"),
        writer_version: packageVersion(),
        reason: options.reason ?? null,
        host: hostName,
        policy_source: null as PolicySource | null,
        dry_run: dryRun,
        started_at: new Date(started).toISOString(),
        caps: [] as Array<Cap>,
        scanned: 0,
        deleted: [] as Array<{ path: string; bytes: number; cleaner: string }>,
        errors: [] as Array<{ path: string; error: string }>,
        cleaners: {} as Record<string, unknown>,
        filesystems: [] as Array<FilesystemReport>,
        build_caches_resume_from: null as ReadonlyArray<string> | null,
        backup_twins_cursor: null as string | null
      }
      const cap = (which: Cap) => {
        if (!base.caps.includes(which)) base.caps.push(which)
      }
      const finish = (
        outcome: Outcome,
        extra: Partial<CleanupReport> & {
          policy?: DiskCleanupPolicy
          freeBefore?: number | null
          freeAfter?: number | null
        }
      ): CleanupReport => {
        const { freeAfter, freeBefore, policy, ...rest } = extra
        return {
          ...base,
          outcome,
          detail: null,
          mode: policy?.mode ?? null,
          finished_at: new Date().toISOString(),
          free_bytes_before: freeBefore ?? null,
          free_bytes_after: freeAfter ?? null,
          low_free_gb: policy?.low_free_gb ?? null,
          target_free_gb: policy?.target_free_gb ?? null,
          deleted_bytes: base.deleted.reduce((sum, d) => sum + d.bytes, 0),
          ...rest
        }
      }
      const persist = (report: CleanupReport, next: Partial<JanitorState>) =>
        Effect.sync(() => {
          if (!dryRun) writeFileAtomically(stateFile, `${JSON.stringify({ ...state, ...next, report }, null, 2)}\n`)
          return report
        })

      const policyRead = yield* policyFor(hostName)
      if (!policyRead.ok) return yield* persist(finish("invalid_or_unavailable_policy", { detail: policyRead.why }), {})
      const policy = policyRead.policy
      base.policy_source = policyRead.source
      const passSeconds = policy.max_pass_seconds ?? DEFAULT_PASS_SECONDS
      const deadline = started + passSeconds * 1000

      const lock = dryRun ? undefined : acquireLock(stateDir, passSeconds * 2_000 + 5_000, started)
      // The state file belongs to the holder; a busy pass only answers.
      if (lock?.kind === "busy")
        return finish("lock_busy", { policy, detail: `pass ${lock.holder.pid} holds the lock` })
      const heartbeat = lock === undefined ? undefined : setInterval(() => lock.beat(), 1_000).unref()
      return yield* Effect.gen(function* () {
        if (holdMs > 0) yield* Effect.sleep(holdMs)
        if (lock !== undefined) yield* Effect.promise(() => lock.witnessed)
        let guardList: ReturnType<typeof protectedPaths> = []
        const release =
          policy.cleaners.release_store === undefined ? undefined : yield* releaseContext(policyRead.document)
        const slots = cleanerSlots({
          release,
          policy,
          nowMs: started,
          uid: process.getuid?.() ?? 0,
          platform: process.platform,
          protectedPaths: () => guardList,
          statesOf: queue.statesOf,
          onProgress: options.onProgress
        })
        const records = slots.flatMap((slot) => (slot.kind === "ready" ? [slot.record] : []))
        const before = yield* measure(records)
        const known = [...before.free.values()].filter((f): f is number => f !== null)
        const free = known.length === 0 ? null : Math.min(...known)
        const pressure = known.some((f) => f < policy.low_free_gb * GIB)
        const pursuing = state.goal !== null
        // With no cleaner able to run there is nothing to measure: the pass reports why, ungated.
        const gated = options.toTarget !== true && !pursuing && records.length > 0
        const fsReport = (after: Map<number, number | null> | undefined) =>
          [...before.byDevice].map(([dev, roots]) => ({
            roots,
            free_bytes_before: before.free.get(dev) ?? null,
            free_bytes_after: after?.get(dev) ?? null,
            reached_target: (after?.get(dev) ?? before.free.get(dev) ?? -1) >= policy.target_free_gb * GIB
          }))
        base.filesystems = fsReport(undefined)
        if (
          gated &&
          state.last_pass_at !== null &&
          started - state.last_pass_at < policy.check_interval_seconds * 1000 &&
          !pressure
        )
          return finish("interval_noop", { policy, freeBefore: free })
        if (gated && !pressure)
          return yield* persist(finish("healthy_noop", { policy, freeBefore: free }), { last_pass_at: started })
        if (policy.mode === "off")
          return yield* persist(
            finish("report_only", { policy, freeBefore: free, detail: "mode off: nothing scanned" }),
            { last_pass_at: started }
          )
        // queue_workdirs alone does not need the host idle: it only takes finished jobs' trees.
        const busy = policy.cleaners.build_caches === undefined ? undefined : yield* busyWith
        if (busy !== undefined) {
          const report = finish("blocked_running_jobs", { policy, freeBefore: free, detail: busy })
          return yield* persist(report, { last_pass_at: started })
        }
        const runningIds = policy.cleaners.queue_workdirs?.root === undefined ? [] : yield* runningJobIds
        guardList = protectedPaths(policy, slots, runningIds)
        const mounts = mountPoints()

        // Scan every cleaner within one budget, starting with the one a budget stopped last time.
        const digest = sha256Hex(JSON.stringify(policy))
        const previous = state.checkpoints?.policy_digest === digest ? state.checkpoints : null
        const cursors: Record<string, unknown> = {}
        const budget = scanBudget({ maxItems: policy.max_scan_items, deadlineMs: deadline })
        const first = Math.max(
          0,
          records.findIndex((r) => r.name === previous?.next)
        )
        const order = [...records.slice(first), ...records.slice(0, first)]
        let next: string | null = null
        const candidates: Array<Candidate & { cleaner: string; resumed?: boolean }> = []
        for (const record of order) {
          const cursor =
            previous?.roots?.[record.name] === record.root.real ? (previous.cursors?.[record.name] ?? null) : null
          const spent = budget.exhausted()
          if (spent !== undefined) {
            cursors[record.name] = cursor
            next ??= record.name
            cap(spent)
            base.cleaners[record.name] = { status: "not_scanned", reason: spent, root: record.root.real }
            continue
          }
          const scan = yield* record.scan(budget, cursor)
          const kept: Array<Candidate> = []
          const skipped = [...scan.skipped]
          const ids = protectedIdsFor(guardList, record.name)
          for (const candidate of scan.candidates) {
            const refusal = protectionRefusal(guardList, record, candidate.path, candidate.directory)
            if (refusal !== undefined) {
              skipped.push({ path: candidate.path, reason: refusal })
              continue
            }
            if (!candidate.directory) {
              kept.push(candidate)
              continue
            }
            const survey = yield* Effect.sync(() =>
              surveyPath(candidate.path, { protectedIds: ids, mountPoints: mounts }, () => budget.charge())
            )
            if (survey.refusal !== undefined) skipped.push({ path: candidate.path, reason: survey.refusal })
            else kept.push({ ...candidate, bytes: survey.bytes })
          }
          base.scanned += scan.scanned
          cursors[record.name] = scan.cursor
          if (scan.cursor !== null) {
            next ??= record.name
            cap(budget.exhausted() ?? "max_scan_items")
          }
          base.cleaners[record.name] = summarize(record, { ...scan, candidates: kept, skipped }, scan.cursor === null)
          for (const candidate of kept) candidates.push({ ...candidate, cleaner: record.name })
        }
        for (const slot of slots)
          if (slot.kind === "unavailable")
            base.cleaners[slot.name] = { status: slot.status, reason: slot.reason, candidates: [], skipped: {} }
        for (const name of Object.keys(policy.cleaners))
          if (!(CleanerNames as ReadonlyArray<string>).includes(name))
            base.cleaners[name] = { status: "unavailable", reason: "this cleaner is not built yet" }
        const frontier = cursors.build_caches
        base.build_caches_resume_from =
          Array.isArray(frontier) && frontier.length > 0 ? (frontier as Array<string>) : null
        base.backup_twins_cursor = typeof cursors.backup_twins === "string" ? cursors.backup_twins : null
        // Kept while any walk is unfinished or a cleaner waits its turn (it goes first next pass).
        const anyCursor = next !== null || Object.values(cursors).some((c) => c !== null)
        const checkpoints = anyCursor
          ? {
              policy_digest: digest,
              roots: Object.fromEntries(records.map((r) => [r.name, r.root.real])),
              cursors,
              next
            }
          : null

        // Deletions a failure or a deadline interrupted are finished first (their tag is still there).
        const pending = (state.pending ?? []).filter((p) => records.some((r) => r.name === p.cleaner))
        const queueOrder = [
          ...pending
            .filter((p) => !candidates.some((c) => c.path === p.path))
            .map((p) => ({ ...p, bytes: 0, directory: true, resumed: true })),
          ...candidates
        ]

        const reportOnly =
          lock?.kind === "recovery"
            ? "lock_recovery_report_only"
            : policy.mode !== "enforce" || dryRun
              ? "report_only"
              : undefined
        if (reportOnly !== undefined) {
          const report = finish(reportOnly, {
            policy,
            freeBefore: free,
            detail:
              lock?.kind === "recovery"
                ? `the retired lock holder ${lock.predecessor} may still run: nothing deleted until the kernel says it is gone`
                : null
          })
          return yield* persist(report, { last_pass_at: started, checkpoints })
        }
        if (queueOrder.length === 0) {
          const report = finish(base.caps.length > 0 ? "cap_reached" : "no_eligible_items", {
            policy,
            freeBefore: free
          })
          return yield* persist(report, { last_pass_at: started, checkpoints, pending: [] })
        }

        // Delete within the items, bytes and seconds budgets; a filesystem at its target takes no more.
        const targetBytes = policy.target_free_gb * GIB
        const current = new Map(before.free)
        const atTarget = (dev: number) => (current.get(dev) ?? -1) >= targetBytes
        let stillPending = [...pending]
        const savePending = () =>
          Effect.sync(() => {
            writeFileAtomically(stateFile, `${JSON.stringify({ ...readState(), pending: stillPending }, null, 2)}\n`)
          })
        const byName = new Map(records.map((r) => [r.name, r]))
        for (const candidate of queueOrder) {
          const record = byName.get(candidate.cleaner)!
          if ([...before.byDevice.keys()].every(atTarget)) break
          if (atTarget(record.root.dev)) continue
          if (base.deleted.length >= policy.max_items_per_pass) {
            cap("max_items_per_pass")
            break
          }
          if (base.deleted.reduce((s, d) => s + d.bytes, 0) + candidate.bytes > policy.max_bytes_per_pass) {
            cap("max_bytes_per_pass")
            break
          }
          if (Date.now() > deadline) {
            cap("max_pass_seconds")
            break
          }
          const now = Date.now()
          const removal = yield* record.removal(candidate, now)
          if (removal.refusal !== undefined) {
            base.errors.push({
              path: candidate.path,
              error: `no longer eligible at deletion time (${removal.refusal}); kept`
            })
            continue
          }
          if (candidate.directory && !stillPending.some((p) => p.path === candidate.path)) {
            const { cleaner, dev, ino, path: where, reason } = candidate
            stillPending = [...stillPending, { cleaner, path: where, dev, ino, reason }]
            yield* savePending()
          }
          const result = yield* Effect.promise(() =>
            removeBeneath(
              {
                root: record.root,
                target: candidate.path,
                expected: candidate,
                keepLast: removal.keepLast,
                companions: removal.companions,
                verify: removal.verify
              },
              { protectedIds: protectedIdsFor(guardList, record.name), mountPoints: mounts, deadlineMs: deadline }
            )
          )
          if (result.ok) {
            base.deleted.push({ path: candidate.path, bytes: result.bytes, cleaner: record.name })
            stillPending = stillPending.filter((p) => p.path !== candidate.path)
            current.set(record.root.dev, Option.getOrNull(yield* meter.available(record.root.real).pipe(Effect.option)))
          } else if (result.deadline === true) {
            cap("max_pass_seconds")
            break
          } else {
            base.errors.push({
              path: candidate.path,
              error: `no longer eligible at deletion time (${result.reason}); kept`
            })
            // A refusal before anything was removed: nothing to resume.
            if (result.bytes === 0) stillPending = stillPending.filter((p) => p.path !== candidate.path)
          }
          if (options.afterCandidate !== undefined) {
            const hook = options.afterCandidate
            yield* Effect.promise(async () => hook(candidate))
          }
        }
        const after = yield* measure(records)
        base.filesystems = fsReport(after.free)
        const knownAfter = [...after.free.values()].filter((f): f is number => f !== null)
        const freeAfter = knownAfter.length === 0 ? null : Math.min(...knownAfter)
        const reachedTarget = knownAfter.length > 0 && knownAfter.every((f) => f >= targetBytes)
        // At the target without deleting anything (a goal pursued from an earlier pass, met by a new policy or by
        // space freed elsewhere): nothing was reclaimed, nothing was needed.
        const outcome: Outcome = reachedTarget
          ? base.deleted.length === 0
            ? "healthy_noop"
            : "reclaimed_target"
          : base.errors.length > 0
            ? "partial_error"
            : base.caps.length > 0
              ? "cap_reached"
              : base.deleted.length > 0
                ? "reclaimed_progress"
                : "no_eligible_items"
        const goal = reachedTarget
          ? null
          : pressure || pursuing
            ? { target_free_gb: policy.target_free_gb, since: state.goal?.since ?? started }
            : null
        return yield* persist(finish(outcome, { policy, freeBefore: free, freeAfter }), {
          last_pass_at: started,
          checkpoints,
          goal,
          pending: stillPending
        })
      }).pipe(
        Effect.ensuring(
          Effect.sync(() => {
            if (heartbeat !== undefined) clearInterval(heartbeat)
            lock?.release()
          })
        )
      )
    })

    /**
     * What release_store reads: the versions hosts name and the registry declares, and the evidence source — this
     * host's object store, or the control plane's object API (KEEL_CONTROL_PLANE_URL, the grant in
     * KEEL_JANITOR_GRANT_FILE, else KEEL_GRANT_FILE, holding object-read) on a host that reports to one elsewhere.
     */
    const releaseContext = (document: FleetRegistryDocument) =>
      Effect.gen(function* () {
        const namedByHost = new Set<string>()
        const productOf = new Map<string, string>()
        for (const target of document.targets)
          for (const binary of target.binaries ?? []) {
            productOf.set(binary.name, binary.product)
            if (binary.version !== undefined) namedByHost.add(`${binary.product}/${binary.version}`)
          }
        const declared = new Set<string>()
        for (const [name, version] of Object.entries(document.release_control.versions)) {
          declared.add(`${name}/${version}`)
          const product = productOf.get(name)
          if (product !== undefined) declared.add(`${product}/${version}`)
        }
        const evidence: ReleaseEvidenceSource = Option.isSome(controlPlane)
          ? yield* remoteEvidence
          : Option.isSome(localObjects)
            ? {
                get: (key) =>
                  Effect.map(
                    localObjects.value.get(key),
                    Option.map((o) => o.bytes)
                  ),
                list: (prefix) => Effect.map(localObjects.value.list(prefix), (heads) => heads.map((h) => h.key))
              }
            : unreadableEvidence("this process has no object store")
        return { namedByHost, declared, evidence, objectDir: path.resolve(objectDir) }
      })

    const unreadableEvidence = (detail: string): ReleaseEvidenceSource => ({
      get: () => Effect.fail({ detail }),
      list: () => Effect.fail({ detail })
    })

    const remoteEvidence = configuredObjectApiClient(["KEEL_JANITOR_GRANT_FILE", "KEEL_GRANT_FILE"]).pipe(
      Effect.map(
        (client): ReleaseEvidenceSource => ({
          get: client.get,
          list: (prefix) => Effect.map(client.list(prefix), (heads) => heads.map((h) => h.key))
        })
      ),
      Effect.catchAll((error) => Effect.succeed(unreadableEvidence(`${error.code}: ${error.detail}`)))
    )

    /**
     * Why build_caches must wait (a job runs here, or nobody can tell whether one does), or undefined when the host
     * is idle. The jobs are this host's own queue's, or — on a host that reports to a control plane elsewhere — the
     * control plane's, asked with the grant in KEEL_JANITOR_GRANT_FILE (else KEEL_GRANT_FILE) holding job-read for
     * this host. A control plane that does not answer is "cannot tell", which counts as busy.
     */
    const busyWith = Effect.gen(function* () {
      const needsIdle = "build_caches needs the host idle"
      if (Option.isNone(controlPlane)) {
        const running = (yield* queue.usage(0)).get(hostName)?.running ?? 0
        return running > 0 ? `${running} job(s) running on ${hostName}; ${needsIdle}` : undefined
      }
      const asked = yield* configuredAccess(["KEEL_JANITOR_GRANT_FILE", "KEEL_GRANT_FILE"], { needs: "job-read" }).pipe(
        Effect.flatMap((access) => runningJobsOn(access, hostName)),
        Effect.either
      )
      if (asked._tag === "Left")
        return `cannot tell which jobs run on ${hostName}: the control plane (KEEL_CONTROL_PLANE_URL) holds them and did not answer (${asked.left.code}: ${asked.left.detail}); ${needsIdle}`
      const ids = asked.right
      return ids.length > 0
        ? `${ids.length} job(s) running on ${hostName} (the control plane says: ${ids.slice(0, 5).join(", ")}${ids.length > 5 ? ", …" : ""}); ${needsIdle}`
        : undefined
    })

    /** Ids of the jobs running on this host (their trees are protected). */
    const runningJobIds = Effect.map(queue.runningOn(hostName), (jobs) => jobs.map((j) => j.id))

    /** The last recorded pass, or `never_run`. */
    const lastReport = Effect.sync(() => readState().report)

    /** A target's cleaners: which its policy (or the reporting default) configures, and which are built. */
    const cleaners = (host: string) =>
      Effect.map(policyFor(host), (read) => {
        const policy = read.ok ? read.policy : REPORTING_DEFAULT
        return {
          target: host,
          mode: policy.mode,
          declared: read.ok && read.source.declared,
          policy_error: read.ok ? null : read.why,
          cleaners: CleanerNames.map((name) => ({
            name,
            configured: policy.cleaners[name] !== undefined,
            settings: policy.cleaners[name] ?? null,
            available: true
          }))
        }
      })

    /** What the janitor's unit needs to run on its own: the shared unit settings and its state dir. */
    const janitorUnitEnvironment = Effect.map(unitEnvironment, (env) => ({ ...env, KEEL_JANITOR_STATE_DIR: stateDir }))

    return {
      pass,
      lastReport,
      cleaners,
      unitEnvironment: janitorUnitEnvironment.pipe(Effect.provideService(AppConfig, app)),
      stateDir,
      host: hostName
    } as const
  })
}) {}
