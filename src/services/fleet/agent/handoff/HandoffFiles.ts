import * as fs from "node:fs"
import * as path from "node:path"
import { TRANSACTION_ID, TRANSACTION_ID_RULE } from "../../../../contracts/fleet/Handoff.js"
import type { Captured, HandoffReceipt } from "../../../../contracts/fleet/HandoffReport.js"
import type { RootEntry, TreeManifest } from "./TreeManifest.js"
import type { UnionPlan } from "./TreeUnion.js"

/**
 * What a handoff keeps on the target, under `<data dir>/handoff/<transaction>/`: the receipt (what Status reads),
 * the captured state, the checkpoint (A's manifest, the plan, the saved copies) and the data-commit marker.
 * Every file is replaced atomically; the workflow's recorded steps are the truth, these are its evidence.
 */

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

/**
 * A transaction's first receipt: a Run under way with nothing recorded yet. The one default record: every receipt
 * a phase writes is this overlaid with what the transaction already recorded.
 */
export const newReceipt = (fields: {
  readonly transaction: string
  readonly target: string
  readonly attempt: number
  readonly execution_id: string | null
}): HandoffReceipt => ({
  schema: "keel.handoff/v1",
  transaction: fields.transaction,
  target: fields.target,
  phase: "run",
  state: "running",
  execution_id: fields.execution_id,
  attempt: fields.attempt,
  winner: null,
  data_committed: false,
  steps: [],
  captured: null,
  conflicts: [],
  retained: [],
  cancelled_jobs: [],
  refusal: null,
  detail: null
})

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
