import { Clock, Effect } from "effect"
import type { DiskCleanupPolicy } from "../../shared/registry/Schema.js"
import { cleanerSlots, preconditionRefusal } from "./Cleaners.js"
import { deleteWithinCaps, planDeletions } from "./JanitorDelete.js"
import { scopedLock } from "./JanitorLock.js"
import {
  type Frame,
  filesystemsOf,
  GIB,
  type Ground,
  type HeldLock,
  knownFree,
  measure,
  type PassEnv,
  type PassOptions,
  type PolicyRead,
  passSeconds,
  type Scanned,
  type Tally
} from "./JanitorPassModel.js"
import {
  assembleReport,
  type CleanupReport,
  type Ending,
  NO_FINDINGS,
  type Outcome,
  type PassFindings,
  type PassHeader
} from "./JanitorReport.js"
import { scanCleaners } from "./JanitorScan.js"
import type { JanitorState } from "./JanitorState.js"

/*
 * One janitor pass as named phases over immutable values:
 *   begin → policy → withLock → survey → gate → scan → plan → delete → conclude
 * Each phase returns what the next needs; only `conclude` (or an early outcome) writes the state file.
 */

const finish = (frame: Frame, outcome: Outcome, findings: PassFindings, ending: Ending) =>
  Effect.map(Clock.currentTimeMillis, (at) => assembleReport(frame.header, findings, outcome, ending, at))

/** The report, recorded over the state the pass started from (a dry run records nothing). */
const persist = (
  env: PassEnv,
  frame: Frame,
  outcome: Outcome,
  findings: PassFindings,
  ending: Ending,
  next: Partial<JanitorState>
) =>
  Effect.gen(function* () {
    const report = yield* finish(frame, outcome, findings, ending)
    if (!frame.dryRun) yield* env.state.record(frame.state, next, report)
    return report
  })

/** One pass: the policy, then everything else under the lock. */
export const runPass = (env: PassEnv, options: PassOptions): Effect.Effect<CleanupReport> =>
  Effect.gen(function* () {
    const frame = yield* begin(env, options)
    const read = yield* env.policy
    if (!read.ok)
      return yield* persist(env, frame, "invalid_or_unavailable_policy", NO_FINDINGS, { detail: read.why }, {})
    const framed: Frame = { ...frame, header: { ...frame.header, policy_source: read.source } }
    return yield* withLock(env, framed, read.policy, (lock) => locked(env, framed, read, lock))
  })

const begin = (env: PassEnv, options: PassOptions) =>
  Effect.gen(function* () {
    const clock = yield* Effect.clock
    const started = clock.unsafeCurrentTimeMillis()
    const dryRun = options.dryRun === true
    const header: PassHeader = {
      writer: options.writer,
      trigger: options.trigger ?? (options.writer === "queue-agent" ? "tick" : "manual"),
      writer_version: env.version(),
      reason: options.reason ?? null,
      host: env.host,
      policy_source: null,
      dry_run: dryRun,
      started_at: new Date(started).toISOString()
    }
    const now = () => clock.unsafeCurrentTimeMillis()
    return { options, dryRun, started, now, state: yield* env.state.read, header } satisfies Frame
  })

/**
 * `body` under the janitor lock for the life of a scope (heartbeat included, released however the body ends);
 * a dry run writes nothing and takes no lock. The state file belongs to the holder: a busy pass only answers.
 */
const withLock = (
  env: PassEnv,
  frame: Frame,
  policy: DiskCleanupPolicy,
  body: (lock: HeldLock | undefined) => Effect.Effect<CleanupReport>
) =>
  frame.dryRun
    ? body(undefined)
    : Effect.scoped(
        Effect.gen(function* () {
          const lock = yield* scopedLock(env.stateDir, passSeconds(policy) * 2_000 + 5_000)
          if (lock.kind === "busy")
            return yield* finish(frame, "lock_busy", NO_FINDINGS, {
              policy,
              detail: `pass ${lock.holder.pid} holds the lock`
            })
          return yield* body(lock)
        })
      )

/** The phases the lock covers; each early outcome is recorded where it is decided. */
const locked = (env: PassEnv, frame: Frame, read: Extract<PolicyRead, { ok: true }>, lock: HeldLock | undefined) =>
  Effect.gen(function* () {
    if (env.holdMs > 0) yield* Effect.sleep(env.holdMs)
    if (lock !== undefined) yield* Effect.promise(() => lock.witnessed)
    const ground = yield* survey(env, frame, read)
    const gated = yield* gate(env, frame, ground)
    if (gated !== undefined) return gated
    const scan = yield* scanCleaners(env, frame, ground)
    const plan = planDeletions(frame, ground, scan, lock)
    const ending = { policy: ground.policy, freeBefore: ground.free }
    const checkpoints = scan.checkpoints
    if (plan.reportOnly !== undefined)
      return yield* persist(
        env,
        frame,
        plan.reportOnly,
        scan.findings,
        { ...ending, detail: plan.detail },
        {
          last_pass_at: frame.started,
          checkpoints
        }
      )
    if (plan.queue.length === 0) {
      const outcome = scan.findings.caps.length > 0 ? "cap_reached" : "no_eligible_items"
      return yield* persist(env, frame, outcome, scan.findings, ending, {
        last_pass_at: frame.started,
        checkpoints,
        pending: []
      })
    }
    const tally = yield* deleteWithinCaps(env, frame, ground, scan, plan)
    return yield* conclude(env, frame, ground, scan, tally)
  })

/** The policy's cleaners as records, and the free space of the filesystems they clean. */
const survey = (env: PassEnv, frame: Frame, read: Extract<PolicyRead, { ok: true }>) =>
  Effect.gen(function* () {
    const policy = read.policy
    const slots = cleanerSlots({
      release: yield* env.release(policy, read.document),
      policy,
      nowMs: frame.started,
      uid: env.uid,
      platform: env.platform,
      statesOf: env.statesOf,
      onProgress: frame.options.onProgress
    })
    const records = slots.flatMap((slot) => (slot.kind === "ready" ? [slot.record] : []))
    const before = yield* measure(env.meter, records)
    const known = knownFree(before.free)
    return {
      policy,
      deadline: frame.started + passSeconds(policy) * 1000,
      slots,
      records,
      before,
      free: known.length === 0 ? null : Math.min(...known),
      pressure: known.some((f) => f < policy.low_free_gb * GIB)
    } satisfies Ground
  })

/**
 * Whether the pass stops before scanning: inside the interval, healthy, mode off, or a configured cleaner's
 * precondition unmet (build_caches needs the host idle). Undefined: scan.
 */
const gate = (env: PassEnv, frame: Frame, ground: Ground) =>
  Effect.gen(function* () {
    const { policy, pressure } = ground
    const findings = { ...NO_FINDINGS, filesystems: filesystemsOf(ground) }
    const ending = { policy, freeBefore: ground.free }
    const lastPass = { last_pass_at: frame.started }
    // With no cleaner able to run there is nothing to measure: the pass reports why, ungated.
    const gated = frame.options.toTarget !== true && frame.state.goal === null && ground.records.length > 0
    const last = frame.state.last_pass_at
    if (gated && last !== null && frame.started - last < policy.check_interval_seconds * 1000 && !pressure)
      return yield* finish(frame, "interval_noop", findings, ending)
    if (gated && !pressure) return yield* persist(env, frame, "healthy_noop", findings, ending, lastPass)
    if (policy.mode === "off")
      return yield* persist(
        env,
        frame,
        "report_only",
        findings,
        { ...ending, detail: "mode off: nothing scanned" },
        lastPass
      )
    const refusal = yield* preconditionRefusal(policy, env.checks)
    if (refusal !== undefined)
      return yield* persist(env, frame, "blocked_running_jobs", findings, { ...ending, detail: refusal }, lastPass)
    return undefined
  })

/** Measures again, names the outcome, keeps or drops the goal, and records the pass. */
const conclude = (env: PassEnv, frame: Frame, ground: Ground, scan: Scanned, tally: Tally) =>
  Effect.gen(function* () {
    const { policy } = ground
    const after = yield* measure(env.meter, ground.records)
    const knownAfter = knownFree(after.free)
    const freeAfter = knownAfter.length === 0 ? null : Math.min(...knownAfter)
    const reachedTarget = knownAfter.length > 0 && knownAfter.every((f) => f >= policy.target_free_gb * GIB)
    const goal = reachedTarget
      ? null
      : ground.pressure || frame.state.goal !== null
        ? { target_free_gb: policy.target_free_gb, since: frame.state.goal?.since ?? frame.started }
        : null
    const { caps, deleted, errors, pending } = tally
    const findings = { ...scan.findings, caps, deleted, errors, filesystems: filesystemsOf(ground, after.free) }
    return yield* persist(
      env,
      frame,
      outcomeOf(reachedTarget, tally),
      findings,
      { policy, freeBefore: ground.free, freeAfter },
      { last_pass_at: frame.started, checkpoints: scan.checkpoints, goal, pending }
    )
  })

/**
 * At the target without deleting anything (a goal pursued from an earlier pass, met by a new policy or by space
 * freed elsewhere): nothing was reclaimed, nothing was needed.
 */
const outcomeOf = (reachedTarget: boolean, tally: Tally): Outcome =>
  reachedTarget
    ? tally.deleted.length === 0
      ? "healthy_noop"
      : "reclaimed_target"
    : tally.errors.length > 0
      ? "partial_error"
      : tally.caps.length > 0
        ? "cap_reached"
        : tally.deleted.length > 0
          ? "reclaimed_progress"
          : "no_eligible_items"
