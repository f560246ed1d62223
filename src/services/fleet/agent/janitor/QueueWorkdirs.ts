import * as fs from "node:fs"
import * as path from "node:path"
import type { JobState } from "../../../../contracts/fleet/Jobs.js"
import type { Candidate, Skip } from "./BuildCaches.js"
import type { ScanBudget } from "./ScanBudget.js"

/**
 * queue_workdirs: `<root>/<job id>/…` trees. A tree is a candidate only when the queue knows its job
 * and the job is finished (succeeded, failed, cancelled) and the tree is older than min_age; a tree
 * whose job is queued or running is kept, and one whose job id the queue does not know is kept and
 * reported (it may belong to another queue, or to a job whose record was lost). Entries are visited in
 * name order after `cursor` (the last name handled), within the pass's scan budget.
 */
export const scanQueueWorkdirs = (options: {
  readonly root: string
  readonly minAgeSeconds: number
  readonly nowMs: number
  readonly stateOf: (jobId: string) => JobState | undefined
  readonly budget: ScanBudget
  readonly cursor: string | null
}) => {
  const candidates: Array<Candidate> = []
  const skipped: Array<Skip> = []
  let names: Array<string> = []
  try {
    names = fs.readdirSync(options.root).sort()
  } catch (error) {
    skipped.push({ path: options.root, reason: `unreadable: ${(error as Error).message}` })
  }
  let scanned = 0
  let last: string | null = options.cursor
  for (const name of names) {
    if (options.cursor !== null && name <= options.cursor) continue
    if (!options.budget.charge()) return { candidates, skipped, scanned, cursor: last ?? "" }
    scanned++
    last = name
    const dir = path.join(options.root, name)
    const stat = fs.lstatSync(dir, { throwIfNoEntry: false })
    if (stat === undefined || !stat.isDirectory()) continue // symlinks and files are never job trees
    const state = options.stateOf(name)
    const reason =
      state === undefined
        ? "unknown_job"
        : state === "queued" || state === "running"
          ? "job_active"
          : options.nowMs - stat.mtimeMs < options.minAgeSeconds * 1000
            ? "too_young"
            : undefined
    if (reason === undefined)
      candidates.push({ path: dir, bytes: 0, reason: `job_${state}`, dev: stat.dev, ino: stat.ino, directory: true })
    else skipped.push({ path: dir, reason })
  }
  return { candidates, skipped, scanned, cursor: null }
}
