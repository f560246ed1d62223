import * as fs from "node:fs"
import { Effect } from "effect"
import { writeFileAtomically } from "../../../platform/Files.js"
import type { CleanupReport } from "./JanitorReport.js"

/** A directory candidate whose removal began: the next pass finishes it first (its tag is still there). */
export interface PendingRemoval {
  readonly cleaner: string
  readonly path: string
  readonly dev: number
  readonly ino: number
  readonly reason: string
}

export interface Checkpoints {
  readonly policy_digest: string
  readonly roots: Record<string, string>
  readonly cursors: Record<string, unknown>
  readonly next: string | null
}

export interface JanitorState {
  readonly last_pass_at: number | null
  readonly report: CleanupReport | null
  /** An unfinished pressure pass keeps its goal until the target is free. */
  readonly goal: { readonly target_free_gb: number; readonly since: number } | null
  /** Per-cleaner cursors, valid for one policy and the roots it resolved to; `next` resumes first. */
  readonly checkpoints: Checkpoints | null
  readonly pending?: ReadonlyArray<PendingRemoval>
}

const EMPTY_STATE: JanitorState = { last_pass_at: null, report: null, goal: null, checkpoints: null, pending: [] }

/**
 * The janitor's state file: the last report, the interval's clock, the goal, the cursors and the removals in
 * flight. Written whole and atomically by the lock holder; an unreadable file reads as empty.
 */
export const stateFileAt = (file: string) => {
  const readSync = (): JanitorState => {
    try {
      return { ...EMPTY_STATE, ...(JSON.parse(fs.readFileSync(file, "utf8")) as JanitorState) }
    } catch {
      return EMPTY_STATE
    }
  }
  return {
    read: Effect.sync(readSync),
    /** The state a pass started from, with `next` over it and the pass's report. */
    record: (from: JanitorState, next: Partial<JanitorState>, report: CleanupReport) =>
      Effect.sync(() => writeFileAtomically(file, `${JSON.stringify({ ...from, ...next, report }, null, 2)}\n`)),
    /** The removals in flight, over the file as it is now (written before each directory removal begins). */
    savePending: (pending: ReadonlyArray<PendingRemoval>) =>
      Effect.sync(() => writeFileAtomically(file, `${JSON.stringify({ ...readSync(), pending }, null, 2)}\n`))
  }
}
