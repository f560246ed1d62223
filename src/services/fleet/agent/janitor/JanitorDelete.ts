import { Effect, Either } from "effect"
import type { DiskCleanupPolicy } from "../../shared/registry/Schema.js"
import type { CleanerRecord } from "./Cleaners.js"
import {
  type Frame,
  freeOn,
  GIB,
  type Ground,
  type HeldLock,
  type PassEnv,
  type Plan,
  type Queued,
  type Scanned,
  type Tally
} from "./JanitorPassModel.js"
import { type Cap, type PassError, withCap } from "./JanitorReport.js"
import { protectedIdsFor } from "./Protection.js"
import { type RemovalFailed, type RemoveResult, removeBeneathEffect } from "./SafeRemove.js"

/* The plan and delete phases of a janitor pass: what to delete in which order, then deletion within the caps. */

/** What to delete, in order (interrupted removals first), or why nothing may be deleted this pass. */
export const planDeletions = (frame: Frame, ground: Ground, scan: Scanned, lock: HeldLock | undefined): Plan => {
  // Deletions a failure or a deadline interrupted are finished first (their tag is still there).
  const pending = (frame.state.pending ?? []).filter((p) => ground.records.some((r) => r.name === p.cleaner))
  const resumed = pending
    .filter((p) => !scan.candidates.some((c) => c.path === p.path))
    .map((p) => ({ ...p, bytes: 0, directory: true, resumed: true }))
  const recovering = lock?.kind === "recovery"
  return {
    pending,
    queue: [...resumed, ...scan.candidates],
    reportOnly: recovering
      ? "lock_recovery_report_only"
      : ground.policy.mode !== "enforce" || frame.dryRun
        ? "report_only"
        : undefined,
    detail: recovering
      ? `the retired lock holder ${lock.predecessor} may still run: nothing deleted until the kernel says it is gone`
      : null
  }
}

/** The cap that stops the deletions before `candidate`, if any. */
const capBefore = (
  policy: DiskCleanupPolicy,
  tally: Tally,
  candidate: Queued,
  pastDeadline: boolean
): Cap | undefined =>
  tally.deleted.length >= policy.max_items_per_pass
    ? "max_items_per_pass"
    : tally.deleted.reduce((s, d) => s + d.bytes, 0) + candidate.bytes > policy.max_bytes_per_pass
      ? "max_bytes_per_pass"
      : pastDeadline
        ? "max_pass_seconds"
        : undefined

/** Deletes within the items, bytes and seconds budgets; a filesystem at its target takes no more. */
export const deleteWithinCaps = (env: PassEnv, frame: Frame, ground: Ground, scan: Scanned, plan: Plan) =>
  Effect.gen(function* () {
    const targetBytes = ground.policy.target_free_gb * GIB
    const current = new Map(ground.before.free)
    const atTarget = (dev: number) => (current.get(dev) ?? -1) >= targetBytes
    const byName = new Map(ground.records.map((r) => [r.name, r]))
    let tally: Tally = { caps: scan.findings.caps, deleted: [], errors: [], pending: plan.pending }
    for (const candidate of plan.queue) {
      const record = byName.get(candidate.cleaner)!
      if ([...ground.before.byDevice.keys()].every(atTarget)) break
      if (atTarget(record.root.dev)) continue
      const cap = capBefore(ground.policy, tally, candidate, frame.now() > ground.deadline)
      if (cap !== undefined) {
        tally = { ...tally, caps: withCap(tally.caps, cap) }
        break
      }
      const step = yield* removeOne(env, frame, ground, scan, record, candidate, tally)
      tally = step.tally
      if (step.kind === "deadline") break
      if (step.kind === "kept") continue
      if (step.kind === "deleted") current.set(record.root.dev, yield* freeOn(env.meter, record.root.real))
      const hook = frame.options.afterCandidate
      if (hook !== undefined) yield* Effect.promise(async () => hook(candidate))
    }
    return tally
  })

const keptError = (path: string, why: string): PassError => ({
  path,
  error: `no longer eligible at deletion time (${why}); kept`
})

/**
 * One candidate: the cleaner's re-check, its pending record (a directory's removal may be interrupted), the
 * removal beneath the root, and what it leaves in the tally.
 */
const removeOne = (
  env: PassEnv,
  frame: Frame,
  ground: Ground,
  scan: Scanned,
  record: CleanerRecord,
  candidate: Queued,
  tally: Tally
) =>
  Effect.gen(function* () {
    const removal = yield* record.removal(candidate, frame.now())
    if (removal.refusal !== undefined)
      return {
        kind: "kept" as const,
        tally: { ...tally, errors: [...tally.errors, keptError(candidate.path, removal.refusal)] }
      }
    let pending = tally.pending
    if (candidate.directory && !pending.some((p) => p.path === candidate.path)) {
      const { cleaner, dev, ino, path: where, reason } = candidate
      pending = [...pending, { cleaner, path: where, dev, ino, reason }]
      yield* env.state.savePending(pending)
    }
    const removed = yield* Effect.either(
      removeBeneathEffect(
        {
          root: record.root,
          target: candidate.path,
          expected: candidate,
          keepLast: removal.keepLast,
          companions: removal.companions,
          verify: removal.verify
        },
        {
          protectedIds: protectedIdsFor(scan.guard, record.name),
          mountPoints: scan.mounts,
          deadlineMs: ground.deadline,
          now: frame.now
        }
      )
    )
    return settle(record, candidate, { ...tally, pending }, removed)
  })

/** What a removal leaves in the tally (`tally.pending` already holds the candidate's record, if a directory). */
const settle = (
  record: CleanerRecord,
  candidate: Queued,
  tally: Tally,
  removed: Either.Either<RemoveResult, RemovalFailed>
) => {
  const others = tally.pending.filter((p) => p.path !== candidate.path)
  // An error the removal did not expect: the candidate may be partly gone, so it stays pending.
  if (Either.isLeft(removed))
    return {
      kind: "failed" as const,
      tally: { ...tally, errors: [...tally.errors, keptError(candidate.path, removed.left.reason)] }
    }
  const result = removed.right
  if (result.ok)
    return {
      kind: "deleted" as const,
      tally: {
        ...tally,
        pending: others,
        deleted: [...tally.deleted, { path: candidate.path, bytes: result.bytes, cleaner: record.name }]
      }
    }
  if (result.deadline === true)
    return { kind: "deadline" as const, tally: { ...tally, caps: withCap(tally.caps, "max_pass_seconds") } }
  // A refusal before anything was removed: nothing to resume.
  const errors = [...tally.errors, keptError(candidate.path, result.reason)]
  return { kind: "failed" as const, tally: { ...tally, errors, pending: result.bytes === 0 ? others : tally.pending } }
}
