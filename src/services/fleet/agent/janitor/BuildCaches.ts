import * as fs from "node:fs"
import * as path from "node:path"
import type { ProtectedPath } from "./Protection.js"
import { identityKey, within } from "./SafeRemove.js"
import type { ScanBudget } from "./ScanBudget.js"

/** The CACHEDIR.TAG signature (https://bford.info/cachedir/): the first line of a valid tag. */
export const CACHEDIR_SIGNATURE = "Signature: 8a477f597d28d172789f06886806bc55"

/** Something a cleaner proved eligible: its real path, its identity when found, why it may go. */
export interface Candidate {
  readonly path: string
  readonly bytes: number
  readonly reason: string
  readonly dev: number
  readonly ino: number
  readonly directory: boolean
}

export interface Skip {
  readonly path: string
  readonly reason: string
}

export interface BuildCacheScan {
  readonly candidates: ReadonlyArray<Candidate>
  readonly skipped: ReadonlyArray<Skip>
  readonly scanned: number
  /** Directories still to visit when the scan budget ran out (the checkpoint), empty when complete. */
  readonly frontier: ReadonlyArray<string>
}

export interface BuildCacheRules {
  /** The scan root's real path (a declared root spelled through a link is resolved before the walk). */
  readonly root: string
  readonly minAgeSeconds: number
  readonly nowMs: number
  readonly uid: number
  /**
   * Directories never deleted or descended into, even tagged (rule 2 and the janitor's protected paths),
   * matched by real path and by device+inode.
   */
  readonly refused: ReadonlyArray<Pick<ProtectedPath, "real" | "why" | "id">>
  readonly budget: ScanBudget
  readonly onProgress?: ((scanned: number) => void) | undefined
}

const firstLine = (file: string) => {
  const fd = fs.openSync(file, "r")
  try {
    const buffer = Buffer.alloc(128)
    const bytesRead = fs.readSync(fd, buffer, 0, 128, 0)
    return buffer.subarray(0, bytesRead).toString("utf8").split(/\r?\n/)[0] ?? ""
  } finally {
    fs.closeSync(fd)
  }
}

const lstat = (file: string) => {
  try {
    return fs.lstatSync(file)
  } catch {
    return undefined
  }
}

/** How long the walk runs before yielding to the event loop (the queue agent keeps serving meanwhile). */
const SLICE_MS = 20

/**
 * Rule 1 exactly: a directory is a candidate only when it holds a CACHEDIR.TAG whose first line is the
 * signature, the tag is a regular file owned by the same user, the directory's own mtime is older than
 * min_age, it is on the scan root's device, and it was reached without following a symlink (the walk
 * never follows links). Rule 2's refusals win over a valid tag. A candidate is not descended into.
 *
 * The walk uses synchronous lstat/readdir in short slices: on a small machine that is as fast as
 * `find`, where one promise per syscall was several times slower.
 */
export const scanBuildCaches = async (
  rules: BuildCacheRules,
  resumeFrom: ReadonlyArray<string> = []
): Promise<BuildCacheScan> => {
  const candidates: Array<Candidate> = []
  const skipped: Array<Skip> = []
  let scanned = 0
  const device = fs.lstatSync(rules.root).dev
  const refusedIds = new Map(
    rules.refused.flatMap((r) => (r.id === undefined ? [] : [[identityKey(r.id), r] as const]))
  )
  const budget = rules.budget
  const charge = (n = 1) => {
    scanned += n
    budget.charge(n)
  }
  // Resuming changes the order of the walk, never what may be deleted: the same checks run on each dir.
  const stack = resumeFrom.length > 0 ? [...resumeFrom].filter((d) => within(d, rules.root)) : [rules.root]

  const visit = (dir: string) => {
    const stat = lstat(dir)
    if (stat === undefined) return
    charge()
    if (stat.isSymbolicLink() || !stat.isDirectory()) return
    if (stat.dev !== device) {
      skipped.push({ path: dir, reason: "other_device" })
      return
    }
    // Protected directories are neither candidates nor walked into: by path, or by identity (a bind mount).
    const refusal = rules.refused.find((r) => r.real === dir) ?? refusedIds.get(identityKey(stat))
    if (refusal !== undefined) {
      skipped.push({ path: dir, reason: `refused_${refusal.why}` })
      return
    }
    let entries: Array<fs.Dirent>
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true })
    } catch {
      skipped.push({ path: dir, reason: "unreadable" })
      return
    }
    charge(entries.length)
    if (dir !== rules.root && entries.some((e) => e.name === "CACHEDIR.TAG")) {
      const tag = path.join(dir, "CACHEDIR.TAG")
      const tagStat = lstat(tag)
      let signed = false
      try {
        signed = tagStat?.isFile() === true && firstLine(tag) === CACHEDIR_SIGNATURE
      } catch {}
      const reason =
        tagStat === undefined || !tagStat.isFile()
          ? "tag_not_regular_file"
          : tagStat.uid !== rules.uid
            ? "tag_owned_by_other_user"
            : !signed
              ? "tag_signature_mismatch"
              : rules.nowMs - stat.mtimeMs < rules.minAgeSeconds * 1000
                ? "too_young"
                : undefined
      if (reason === undefined) {
        // Bytes, and whether it holds a protected path or a mount, are settled by the pass's survey.
        candidates.push({ path: dir, bytes: 0, reason: "cachedir_tag", dev: stat.dev, ino: stat.ino, directory: true })
        return
      }
      skipped.push({ path: dir, reason })
    }
    const children: Array<string> = []
    for (const entry of entries) if (entry.isDirectory()) children.push(path.join(dir, entry.name))
    // Depth-first in name order (reversed onto the stack), so a resumed walk is deterministic.
    children.sort().reverse()
    for (const child of children) stack.push(child)
  }

  // Slices are event-loop fairness, not a rule: real (monotonic) time, whatever clock the pass's rules run on.
  while (stack.length > 0 && budget.exhausted() === undefined) {
    const sliceEnd = performance.now() + SLICE_MS
    while (stack.length > 0 && budget.exhausted() === undefined && performance.now() < sliceEnd) visit(stack.pop()!)
    rules.onProgress?.(scanned)
    await new Promise((resolve) => setImmediate(resolve))
  }
  return { candidates, skipped, scanned, frontier: stack }
}
