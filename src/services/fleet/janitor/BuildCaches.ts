import * as fs from "node:fs/promises"
import * as path from "node:path"

/** The CACHEDIR.TAG signature (https://bford.info/cachedir/): the first line of a valid tag. */
export const CACHEDIR_SIGNATURE = "Signature: 8a477f597d28d172789f06886806bc55"

export interface Candidate {
  readonly path: string
  readonly bytes: number
  readonly reason: string
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
  readonly root: string
  readonly minAgeSeconds: number
  readonly nowMs: number
  readonly uid: number
  /** Directories never deleted, even tagged (rule 2): state dir, model hub, package registry, declared roots. */
  readonly refused: ReadonlyArray<{ readonly path: string; readonly why: string }>
  readonly maxScanItems: number
}

const firstLine = async (file: string) => {
  const handle = await fs.open(file, "r")
  try {
    const buffer = Buffer.alloc(128)
    const { bytesRead } = await handle.read(buffer, 0, 128, 0)
    return buffer.subarray(0, bytesRead).toString("utf8").split(/\r?\n/)[0] ?? ""
  } finally {
    await handle.close()
  }
}

const within = (child: string, parent: string) => child === parent || child.startsWith(`${parent}${path.sep}`)

/** Bytes under a directory, by lstat, never following links; `count` is charged one per entry. */
const sizeOf = async (dir: string, count: () => void): Promise<number> => {
  let total = 0
  const stack = [dir]
  while (stack.length > 0) {
    const current = stack.pop()!
    let handle: import("node:fs").Dir
    try {
      handle = await fs.opendir(current)
    } catch {
      continue
    }
    for await (const entry of handle) {
      count()
      const full = path.join(current, entry.name)
      try {
        const stat = await fs.lstat(full)
        total += stat.size
        if (stat.isDirectory()) stack.push(full)
      } catch {}
    }
  }
  return total
}

/**
 * Rule 1 exactly: a directory is a candidate only when it holds a CACHEDIR.TAG whose first line is the
 * signature, the tag is a regular file owned by the same user, the directory's own mtime is older than
 * min_age, it is on the scan root's device, and it was reached without following a symlink (the walk
 * never follows links). Rule 2's refusals win over a valid tag. A candidate is not descended into.
 */
export const scanBuildCaches = async (
  rules: BuildCacheRules,
  resumeFrom: ReadonlyArray<string> = []
): Promise<BuildCacheScan> => {
  const candidates: Array<Candidate> = []
  const skipped: Array<Skip> = []
  let scanned = 0
  const rootStat = await fs.lstat(rules.root)
  const device = rootStat.dev
  // Resuming changes the order of the walk, never what may be deleted: the same checks run on each dir.
  const stack = resumeFrom.length > 0 ? [...resumeFrom].filter((d) => within(d, rules.root)) : [rules.root]
  const budgetLeft = () => scanned < rules.maxScanItems
  while (stack.length > 0) {
    if (!budgetLeft()) break
    const dir = stack.pop()!
    let stat: import("node:fs").Stats
    try {
      stat = await fs.lstat(dir)
    } catch {
      continue
    }
    scanned++
    if (stat.isSymbolicLink() || !stat.isDirectory()) continue
    if (stat.dev !== device) {
      skipped.push({ path: dir, reason: "other_device" })
      continue
    }
    const refusal = rules.refused.find((r) => within(dir, r.path))
    const tag = path.join(dir, "CACHEDIR.TAG")
    const tagStat = await fs.lstat(tag).catch(() => undefined)
    if (tagStat !== undefined && dir !== rules.root) {
      if (refusal !== undefined) {
        skipped.push({ path: dir, reason: `refused_${refusal.why}` })
        continue
      }
      const reason = !tagStat.isFile()
        ? "tag_not_regular_file"
        : tagStat.uid !== rules.uid
          ? "tag_owned_by_other_user"
          : (await firstLine(tag).catch(() => "")) !== CACHEDIR_SIGNATURE
            ? "tag_signature_mismatch"
            : rules.nowMs - stat.mtimeMs < rules.minAgeSeconds * 1000
              ? "too_young"
              : undefined
      if (reason === undefined) {
        const bytes = await sizeOf(dir, () => scanned++)
        candidates.push({ path: dir, bytes, reason: "cachedir_tag" })
        continue
      }
      skipped.push({ path: dir, reason })
    }
    if (refusal !== undefined && dir === refusal.path) {
      skipped.push({ path: dir, reason: `refused_${refusal.why}` })
      continue
    }
    let handle: import("node:fs").Dir
    try {
      handle = await fs.opendir(dir)
    } catch {
      skipped.push({ path: dir, reason: "unreadable" })
      continue
    }
    const children: Array<string> = []
    for await (const entry of handle) {
      scanned++
      if (entry.isDirectory()) children.push(path.join(dir, entry.name))
    }
    // Depth-first in name order (reversed onto the stack), so a resumed walk is deterministic.
    children.sort().reverse()
    stack.push(...children)
  }
  return { candidates, skipped, scanned, frontier: stack }
}
