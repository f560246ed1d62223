import * as fs from "node:fs"
import * as path from "node:path"
import { TRANSACTION_ID, TRANSACTION_ID_RULE } from "../../../contracts/fleet/Handoff.js"
import type { RootEntry, TreeManifest } from "./TreeManifest.js"
import type { UnionPlan } from "./TreeUnion.js"

/**
 * What a handoff keeps on the target, under `<data dir>/handoff/<transaction>/`: the receipt (what Status reads),
 * the captured state, the checkpoint (A's manifest, the plan, the saved copies) and the data-commit marker.
 * Every file is replaced atomically; the workflow's recorded steps are the truth, these are its evidence.
 */

/**
 * running: a phase is under way (or was interrupted: Resume); failed: a step failed with the fence held (Rollback
 * before the boundary, Resume after); refused: the run refused before it changed anything lasting;
 * activated_pending_lifecycle: the run's end (Finalize next); rolled_back; complete: finalized.
 */
export type HandoffState = "running" | "failed" | "activated_pending_lifecycle" | "rolled_back" | "refused" | "complete"

export interface Captured {
  /** The target's own queue pause before the handoff (restored exactly). */
  readonly queue: { readonly set: false } | { readonly set: true; readonly paused: boolean }
  /** Each storage writer and whether it was running (only those are started again). */
  readonly writers: ReadonlyArray<{ readonly name: string; readonly unit: string; readonly active: boolean }>
  /** The route file's root, and the runtime's target (a symlink's target, a config file's first line; null if absent). */
  readonly route: string
  readonly runtime: string | null
}

export interface HandoffReceipt {
  readonly schema: "keel.handoff/v1"
  readonly transaction: string
  readonly target: string
  readonly phase: "run" | "rollback" | "finalize"
  readonly state: HandoffState
  /** The workflow execution of the phase under way or last run, and its attempt (a Resume is a new attempt). */
  readonly execution_id: string | null
  readonly attempt: number
  /** The root the object API served at the fenced preflight: the union's winner for the whole transaction. */
  readonly winner: "a" | "b" | null
  readonly data_committed: boolean
  readonly steps: ReadonlyArray<{ readonly step: string; readonly at: string }>
  readonly captured: Captured | null
  readonly conflicts: ReadonlyArray<{ readonly path: string; readonly kept: "a"; readonly why: string }>
  /** The records that became newly authoritative (B-only when A served, A-only when B served). */
  readonly retained: ReadonlyArray<string>
  /** Queued jobs of the target the drain cancelled (handoff_cancelled). */
  readonly cancelled_jobs: ReadonlyArray<string>
  readonly refusal: string | null
  readonly detail: string | null
}

/** The lease that makes one transaction per target at a time: held by the open transaction until it ends. */
export const transactionLeaseKey = (target: string) => `handoff:${target}`

/** What the declared runtime points at now: a symlink's target, a config file's first line; null when absent. */
export const runtimeValue = (runtime: { kind: "symlink" | "config_file"; path: string }) => {
  try {
    return runtime.kind === "symlink"
      ? fs.readlinkSync(runtime.path)
      : (fs.readFileSync(runtime.path, "utf8").split("\n")[0]?.trim() ?? null)
  } catch {
    return null
  }
}

export const handoffDir = (dataDir: string, transaction: string) => {
  if (!TRANSACTION_ID.test(transaction)) throw new Error(`not a transaction id (${TRANSACTION_ID_RULE})`)
  return path.join(dataDir, "handoff", transaction)
}

const writeJson = (file: string, value: unknown) => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  const staged = `${file}.${process.pid}.tmp`
  fs.writeFileSync(staged, `${JSON.stringify(value, null, 2)}\n`)
  fs.renameSync(staged, file)
}

const readJson = <A>(file: string): A | null => {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8")) as A
  } catch {
    return null
  }
}

export const HandoffFiles = (dir: string) => ({
  dir,
  checkpointDir: path.join(dir, "checkpoint"),
  receipt: () => readJson<HandoffReceipt>(path.join(dir, "receipt.json")),
  writeReceipt: (receipt: HandoffReceipt) => writeJson(path.join(dir, "receipt.json"), receipt),
  captured: () => readJson<Captured>(path.join(dir, "captured.json")),
  writeCaptured: (captured: Captured) => writeJson(path.join(dir, "captured.json"), captured),
  checkpoint: () =>
    readJson<{ readonly a: TreeManifest; readonly plan: UnionPlan }>(path.join(dir, "checkpoint", "checkpoint.json")),
  writeCheckpoint: (a: ReadonlyArray<RootEntry>, plan: UnionPlan) =>
    writeJson(path.join(dir, "checkpoint", "checkpoint.json"), { a, plan }),
  committed: () => fs.existsSync(path.join(dir, "data-committed")),
  markCommitted: () => writeJson(path.join(dir, "data-committed"), { at: new Date().toISOString() })
})
