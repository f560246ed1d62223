import { Effect, Option } from "effect"
import type { DiskCleanupPolicy, FleetRegistryDocument } from "../../shared/registry/Schema.js"
import type { Candidate } from "./BuildCaches.js"
import type { CleanerContext, CleanerRecord, CleanerSlot, PassChecks } from "./Cleaners.js"
import type { DiskMeter } from "./DiskMeter.js"
import type { LockOutcome } from "./JanitorLock.js"
import type {
  Cap,
  Deletion,
  FilesystemReport,
  Outcome,
  PassError,
  PassFindings,
  PassHeader,
  PolicySource,
  Trigger,
  Writer
} from "./JanitorReport.js"
import type { Checkpoints, JanitorState, PendingRemoval, stateFileAt } from "./JanitorState.js"
import type { ProtectedPath } from "./Protection.js"

/* The values a janitor pass's phases hand each other (all immutable), and the small measures they share. */

export const GIB = 1024 ** 3
export const DEFAULT_PASS_SECONDS = 30

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

/** The host's policy as read for a pass, or why there is none (never silently the default). */
export type PolicyRead =
  | { readonly ok: false; readonly why: string }
  | {
      readonly ok: true
      readonly policy: DiskCleanupPolicy
      readonly source: PolicySource
      readonly document: FleetRegistryDocument
    }

/** What a pass needs from the janitor service: its settings and its edges. */
export interface PassEnv {
  readonly stateDir: string
  readonly state: ReturnType<typeof stateFileAt>
  readonly host: string
  readonly version: () => string
  /** A diagnostic knob for lock tests and demos: hold the lock this long before scanning. */
  readonly holdMs: number
  readonly uid: number
  readonly platform: NodeJS.Platform
  readonly meter: DiskMeter["Type"]
  readonly policy: Effect.Effect<PolicyRead>
  /** What release_store reads (undefined when the policy does not configure it). */
  readonly release: (
    policy: DiskCleanupPolicy,
    document: FleetRegistryDocument
  ) => Effect.Effect<CleanerContext["release"]>
  readonly statesOf: CleanerContext["statesOf"]
  readonly checks: PassChecks
  /** Everything no cleaner may delete, contain or (for the build-cache walk) enter. */
  readonly guard: (
    policy: DiskCleanupPolicy,
    slots: ReadonlyArray<CleanerSlot>
  ) => Effect.Effect<ReadonlyArray<ProtectedPath>>
}

export type HeldLock = Exclude<LockOutcome, { readonly kind: "busy" }>
export type Queued = Candidate & { readonly cleaner: string; readonly resumed?: boolean }

/** Who asked, when, and the state the pass starts from. */
export interface Frame {
  readonly options: PassOptions
  readonly dryRun: boolean
  readonly started: number
  /** The pass's Clock, for the synchronous walks and the deletion deadline. */
  readonly now: () => number
  readonly state: JanitorState
  readonly header: PassHeader
}

/** Free space per filesystem the ready cleaners' roots live on (grouped by device). */
export interface Measurement {
  readonly byDevice: ReadonlyMap<number, ReadonlyArray<string>>
  readonly free: ReadonlyMap<number, number | null>
}

/** What the pass can run, measured before anything is gated. */
export interface Ground {
  readonly policy: DiskCleanupPolicy
  readonly deadline: number
  readonly slots: ReadonlyArray<CleanerSlot>
  readonly records: ReadonlyArray<CleanerRecord>
  readonly before: Measurement
  /** The tightest filesystem's free bytes, and whether any is under the low watermark. */
  readonly free: number | null
  readonly pressure: boolean
}

export interface Scanned {
  /** Caps, counts, cleaner parts and fields; nothing deleted yet. */
  readonly findings: PassFindings
  readonly candidates: ReadonlyArray<Queued>
  readonly checkpoints: Checkpoints | null
  readonly guard: ReadonlyArray<ProtectedPath>
  readonly mounts: ReadonlyArray<string>
}

export interface Plan {
  readonly pending: ReadonlyArray<PendingRemoval>
  readonly queue: ReadonlyArray<Queued>
  readonly reportOnly: Outcome | undefined
  readonly detail: string | null
}

export interface Tally {
  readonly caps: ReadonlyArray<Cap>
  readonly deleted: ReadonlyArray<Deletion>
  readonly errors: ReadonlyArray<PassError>
  readonly pending: ReadonlyArray<PendingRemoval>
}

export const passSeconds = (policy: DiskCleanupPolicy) => policy.max_pass_seconds ?? DEFAULT_PASS_SECONDS
export const knownFree = (free: ReadonlyMap<number, number | null>) =>
  [...free.values()].filter((f): f is number => f !== null)

export const measure = (meter: PassEnv["meter"], records: ReadonlyArray<CleanerRecord>) =>
  Effect.gen(function* () {
    const byDevice = new Map<number, Array<string>>()
    for (const record of records)
      byDevice.set(record.root.dev, [...(byDevice.get(record.root.dev) ?? []), record.root.real])
    const free = new Map<number, number | null>()
    for (const [dev, roots] of byDevice) free.set(dev, yield* freeOn(meter, roots[0]!))
    return { byDevice, free } satisfies Measurement
  })

export const freeOn = (meter: PassEnv["meter"], root: string) =>
  Effect.map(Effect.option(meter.available(root)), Option.getOrNull)

export const filesystemsOf = (ground: Ground, after?: ReadonlyMap<number, number | null>): Array<FilesystemReport> =>
  [...ground.before.byDevice].map(([dev, roots]) => ({
    roots: [...roots],
    free_bytes_before: ground.before.free.get(dev) ?? null,
    free_bytes_after: after?.get(dev) ?? null,
    reached_target: (after?.get(dev) ?? ground.before.free.get(dev) ?? -1) >= ground.policy.target_free_gb * GIB
  }))
