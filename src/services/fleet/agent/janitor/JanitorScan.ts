import { Effect } from "effect"
import { sha256Hex } from "../../../platform/Digest.js"
import { CleanerNames, type DiskCleanupPolicy } from "../../shared/registry/Schema.js"
import type { Candidate } from "./BuildCaches.js"
import { type CleanerRecord, type CleanerScan, type CleanerSlot, cleanerReportFields } from "./Cleaners.js"
import { type Frame, filesystemsOf, type Ground, type PassEnv, type Queued, type Scanned } from "./JanitorPassModel.js"
import { type Cap, NO_FINDINGS, withCap } from "./JanitorReport.js"
import { type ProtectedPath, protectedIdsFor, protectionRefusal } from "./Protection.js"
import { mountPoints, surveyPath } from "./SafeRemove.js"
import { type ScanBudget, scanBudget } from "./ScanBudget.js"

/* The scan phase of a janitor pass: every ready cleaner within one budget, candidates screened. */

/** Records in scan order: the one a budget stopped last time first, then round-robin. */
const rotated = (records: ReadonlyArray<CleanerRecord>, next: string | null | undefined) => {
  const first = Math.max(
    0,
    records.findIndex((r) => r.name === next)
  )
  return [...records.slice(first), ...records.slice(0, first)]
}

/** Scans every ready cleaner within one budget; the cursors become the next pass's checkpoints. */
export const scanCleaners = (env: PassEnv, frame: Frame, ground: Ground) =>
  Effect.gen(function* () {
    const { policy, records } = ground
    const guard = yield* env.guard(policy, ground.slots)
    const mounts = mountPoints()
    const digest = sha256Hex(JSON.stringify(policy))
    const previous = frame.state.checkpoints?.policy_digest === digest ? frame.state.checkpoints : null
    const budget = scanBudget({ maxItems: policy.max_scan_items, deadlineMs: ground.deadline, now: frame.now })
    let caps: ReadonlyArray<Cap> = []
    let scanned = 0
    let next: string | null = null
    const cursors: Record<string, unknown> = {}
    const cleaners: Record<string, unknown> = {}
    const candidates: Array<Queued> = []
    for (const record of rotated(records, previous?.next)) {
      const cursor =
        previous?.roots?.[record.name] === record.root.real ? (previous.cursors?.[record.name] ?? null) : null
      const one = yield* scanOne(record, budget, cursor, guard, mounts)
      cursors[record.name] = one.cursor
      cleaners[record.name] = one.part
      scanned += one.scanned
      if (one.cap !== undefined) {
        next ??= record.name
        caps = withCap(caps, one.cap)
      }
      for (const candidate of one.kept) candidates.push({ ...candidate, cleaner: record.name })
    }
    Object.assign(cleaners, unscannedParts(policy, ground.slots))
    // Kept while any walk is unfinished or a cleaner waits its turn (it goes first next pass).
    const anyCursor = next !== null || Object.values(cursors).some((c) => c !== null)
    const roots = Object.fromEntries(records.map((r) => [r.name, r.root.real]))
    const checkpoints = anyCursor ? { policy_digest: digest, roots, cursors, next } : null
    const fields = cleanerReportFields(cursors)
    const findings = { ...NO_FINDINGS, caps, scanned, cleaners, filesystems: filesystemsOf(ground), fields }
    return { findings, candidates, checkpoints, guard, mounts } satisfies Scanned
  })

/** The report parts of cleaners that could not run, and of names the policy has but no cleaner is built for. */
const unscannedParts = (policy: DiskCleanupPolicy, slots: ReadonlyArray<CleanerSlot>) => {
  const parts: Record<string, unknown> = {}
  for (const slot of slots)
    if (slot.kind === "unavailable")
      parts[slot.name] = { status: slot.status, reason: slot.reason, candidates: [], skipped: {} }
  for (const name of Object.keys(policy.cleaners))
    if (!(CleanerNames as ReadonlyArray<string>).includes(name))
      parts[name] = { status: "unavailable", reason: "this cleaner is not built yet" }
  return parts
}

/** One cleaner's scan (or why the budget left it out), its candidates screened against the guard. */
const scanOne = (
  record: CleanerRecord,
  budget: ScanBudget,
  cursor: unknown,
  guard: ReadonlyArray<ProtectedPath>,
  mounts: ReadonlyArray<string>
) =>
  Effect.gen(function* () {
    const spent = budget.exhausted()
    if (spent !== undefined)
      return {
        cursor,
        cap: spent,
        scanned: 0,
        kept: [],
        part: { status: "not_scanned", reason: spent, root: record.root.real }
      }
    const scan = yield* record.scan(budget, cursor, guard)
    const { kept, skipped } = yield* screen(record, scan, budget, guard, mounts)
    return {
      cursor: scan.cursor,
      cap: scan.cursor === null ? undefined : (budget.exhausted() ?? "max_scan_items"),
      scanned: scan.scanned,
      kept,
      part: summarize(record, { ...scan, candidates: kept, skipped }, scan.cursor === null)
    }
  })

/** A scan's candidates less the protected ones; a directory's bytes (and refusals) from its survey. */
const screen = (
  record: CleanerRecord,
  scan: CleanerScan,
  budget: ScanBudget,
  guard: ReadonlyArray<ProtectedPath>,
  mounts: ReadonlyArray<string>
) =>
  Effect.gen(function* () {
    const kept: Array<Candidate> = []
    const skipped = [...scan.skipped]
    const ids = protectedIdsFor(guard, record.name)
    for (const candidate of scan.candidates) {
      const refusal = protectionRefusal(guard, record, candidate.path, candidate.directory)
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
    return { kept, skipped }
  })

/** A cleaner's part of the report: its root (as declared and as resolved), scan counts, candidates, skips. */
const summarize = (
  record: CleanerRecord,
  found: Pick<CleanerScan, "candidates" | "skipped" | "scanned">,
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
