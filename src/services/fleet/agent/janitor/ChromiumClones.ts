import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { Candidate, Skip } from "./BuildCaches.js"
import type { ScanBudget } from "./ScanBudget.js"

/** macOS keeps its per-user caches beside $TMPDIR: `/private/var/folders/xx/yyyy/{T,C,X}`. */
export const defaultCloneRoots = () => [path.join(path.dirname(os.tmpdir()), "X")]

/**
 * chromium_clones: the bundle clones macOS makes to validate a browser's code signature at launch
 * (`<root>/<bundle id>.code_sign_clone/`), left behind when the browser exits uncleanly. Eligible past
 * min_age (a running browser refreshes its clone). Linux makes no such clones: nothing is eligible there.
 */
export const scanChromiumClones = (options: {
  readonly platform: NodeJS.Platform
  readonly root: string
  readonly minAgeSeconds: number
  readonly nowMs: number
  readonly budget: ScanBudget
  readonly cursor: string | null
}) => {
  const candidates: Array<Candidate> = []
  const skipped: Array<Skip> = []
  if (options.platform !== "darwin") return { candidates, skipped, scanned: 0, applicable: false, cursor: null }
  let scanned = 0
  let names: Array<string> = []
  try {
    names = fs.readdirSync(options.root).sort()
  } catch {}
  let last = options.cursor
  for (const name of names) {
    if (options.cursor !== null && name <= options.cursor) continue
    if (!options.budget.charge()) return { candidates, skipped, scanned, applicable: true, cursor: last ?? "" }
    scanned++
    last = name
    const dir = path.join(options.root, name)
    const stat = fs.lstatSync(dir, { throwIfNoEntry: false })
    if (stat === undefined || !stat.isDirectory() || !name.endsWith(".code_sign_clone")) continue
    if (options.nowMs - stat.mtimeMs < options.minAgeSeconds * 1000) skipped.push({ path: dir, reason: "too_young" })
    else
      candidates.push({ path: dir, bytes: 0, reason: "code_sign_clone", dev: stat.dev, ino: stat.ino, directory: true })
  }
  return { candidates, skipped, scanned, applicable: true, cursor: null }
}
