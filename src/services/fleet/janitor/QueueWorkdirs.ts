import * as fs from "node:fs"
import * as path from "node:path"
import { treeBytes } from "../../platform/Files.js"
import type { JobState } from "../jobs/JobQueue.js"
import type { Candidate, Skip } from "./BuildCaches.js"

/**
 * queue_workdirs: `<root>/<job id>/…` trees. A tree is a candidate only when the queue knows its job
 * and the job is finished (succeeded, failed, cancelled) and the tree is older than min_age; a tree
 * whose job is queued or running is kept, and one whose job id the queue does not know is kept and
 * reported (it may belong to another queue, or to a job whose record was lost).
 */
export const scanQueueWorkdirs = (options: {
  readonly root: string
  readonly minAgeSeconds: number
  readonly nowMs: number
  readonly stateOf: (jobId: string) => JobState | undefined
}) => {
  const candidates: Array<Candidate> = []
  const skipped: Array<Skip> = []
  let entries: Array<fs.Dirent> = []
  try {
    entries = fs.readdirSync(options.root, { withFileTypes: true })
  } catch (error) {
    skipped.push({ path: options.root, reason: `unreadable: ${(error as Error).message}` })
  }
  for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const dir = path.join(options.root, entry.name)
    if (!entry.isDirectory()) continue // symlinks and files are never job trees
    const state = options.stateOf(entry.name)
    const age = options.nowMs - fs.lstatSync(dir).mtimeMs
    const reason =
      state === undefined
        ? "unknown_job"
        : state === "queued" || state === "running"
          ? "job_active"
          : age < options.minAgeSeconds * 1000
            ? "too_young"
            : undefined
    if (reason === undefined) candidates.push({ path: dir, bytes: treeBytes(dir), reason: `job_${state}` })
    else skipped.push({ path: dir, reason })
  }
  return { candidates, skipped, scanned: entries.length }
}
