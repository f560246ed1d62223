import * as fs from "node:fs"
import * as path from "node:path"

export type ScanCap = "max_scan_items" | "max_pass_seconds"

/**
 * One pass's scan budget, shared by every cleaner: `max_scan_items` entries and `max_pass_seconds` of
 * wall time for the pass as a whole. A cleaner charges each entry it looks at and stops (keeping its
 * cursor) as soon as `exhausted()` names a cap.
 */
export interface ScanBudget {
  /** Counts `n` entries; false when they do not fit (the caller leaves them for the next pass). */
  readonly charge: (n?: number) => boolean
  readonly exhausted: () => ScanCap | undefined
  readonly used: () => number
}

export const scanBudget = (options: {
  readonly maxItems: number
  readonly deadlineMs: number
  readonly now?: () => number
}): ScanBudget => {
  const now = options.now ?? Date.now
  let used = 0
  const exhausted = (): ScanCap | undefined =>
    used >= options.maxItems ? "max_scan_items" : now() > options.deadlineMs ? "max_pass_seconds" : undefined
  return {
    charge: (n = 1) => {
      used += n
      return used <= options.maxItems && now() <= options.deadlineMs
    },
    exhausted,
    used: () => used
  }
}

/** An unlimited budget (a scanner called on its own, as the bench does). */
export const unlimitedBudget = (): ScanBudget =>
  scanBudget({ maxItems: Number.POSITIVE_INFINITY, deadlineMs: Number.POSITIVE_INFINITY })

/** Component-wise order of relative paths ("a/b" < "a-c", as a sorted depth-first walk visits them). */
export const comparePaths = (a: string, b: string): number => {
  const x = a.split("/")
  const y = b.split("/")
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i]! !== y[i]!) return x[i]! < y[i]! ? -1 : 1
  }
  return x.length - y.length
}

/**
 * Regular files under `root` in sorted depth-first order, after `cursor` (a relative path, exclusive),
 * never following links, charging the budget per entry. Returns the last file handed to `visit` when
 * the budget stopped the walk (the next cursor; "" when it stopped before the first), or null when the
 * walk completed.
 */
export const sortedFileWalk = (
  root: string,
  cursor: string | null,
  budget: ScanBudget,
  visit: (relative: string, stat: fs.Stats) => void
): string | null => {
  let last: string | null = cursor
  const walk = (relative: string): boolean => {
    let names: Array<string>
    try {
      names = fs.readdirSync(path.join(root, relative)).sort()
    } catch {
      return true
    }
    for (const name of names) {
      const rel = relative === "" ? name : `${relative}/${name}`
      // Whole subtrees before the cursor were handled by an earlier pass.
      if (cursor !== null && comparePaths(rel, cursor) <= 0 && !cursor.startsWith(`${rel}/`)) continue
      if (!budget.charge()) return false
      const stat = fs.lstatSync(path.join(root, rel), { throwIfNoEntry: false })
      if (stat === undefined) continue
      if (stat.isDirectory()) {
        if (!walk(rel)) return false
      } else {
        visit(rel, stat)
        last = rel
      }
    }
    return true
  }
  // Stopped before the first file: "" resumes from the start (null would mean the walk completed).
  return walk("") ? null : (last ?? "")
}
