import * as fs from "node:fs"
import * as path from "node:path"
import { sha256File } from "../../../platform/Digest.js"
import type { Candidate, Skip } from "./BuildCaches.js"
import { within } from "./SafeRemove.js"
import { type ScanBudget, sortedFileWalk } from "./ScanBudget.js"

/**
 * Why a replica must stay, or undefined when the primary holds the same bytes (checked now). A primary path that
 * resolves (through a symlink in the primary) into the replica root is no copy in the mirrored store: it is a
 * replica again, and deleting its twin would leave one copy where there were two. One that resolves outside the
 * primary root is no copy in the mirrored store either: some local file that happens to match.
 */
export const twinRefusal = (
  replica: string,
  primary: string,
  replicaRoot?: string,
  primaryRoot?: string
): string | undefined => {
  let r: fs.Stats
  let p: fs.Stats
  try {
    r = fs.lstatSync(replica)
  } catch {
    return "missing"
  }
  try {
    p = fs.statSync(primary)
  } catch {
    return "primary_missing"
  }
  if (!r.isFile() || !p.isFile()) return "not_a_regular_file"
  if (replicaRoot !== undefined || primaryRoot !== undefined) {
    try {
      const real = fs.realpathSync(primary)
      if (replicaRoot !== undefined && within(real, fs.realpathSync(replicaRoot))) return "primary_in_replica"
      if (primaryRoot !== undefined && !within(real, fs.realpathSync(primaryRoot))) return "primary_outside_mirror"
    } catch {
      return "primary_missing"
    }
  }
  // The same file under two names: deleting the "replica" would delete the primary.
  if (r.dev === p.dev && r.ino === p.ino) return "same_file_as_primary"
  if (r.size !== p.size) return "primary_differs"
  if (sha256File(replica) !== sha256File(primary)) return "primary_differs"
  return undefined
}

/**
 * backup_twins: files under the replica root whose counterpart (same relative path) in the mirrored
 * store holds the same size and SHA-256. The walk is in path order and resumes after `cursor` (the
 * last relative path handled); `cursor` in the answer is where a walk stopped by the budget resumes.
 */
export const scanBackupTwins = (options: {
  readonly replicaRoot: string
  readonly primaryRoot: string
  readonly cursor: string | null
  readonly budget: ScanBudget
}) => {
  const candidates: Array<Candidate> = []
  const skipped: Array<Skip> = []
  let scanned = 0
  const cursor = sortedFileWalk(options.replicaRoot, options.cursor, options.budget, (rel, stat) => {
    if (!stat.isFile()) return
    scanned++
    const replica = path.join(options.replicaRoot, rel)
    const refusal = twinRefusal(replica, path.join(options.primaryRoot, rel), options.replicaRoot, options.primaryRoot)
    if (refusal === undefined)
      candidates.push({
        path: replica,
        bytes: stat.size,
        reason: "twin_in_primary",
        dev: stat.dev,
        ino: stat.ino,
        directory: false
      })
    else skipped.push({ path: replica, reason: refusal })
  })
  return { candidates, skipped, scanned, cursor }
}
