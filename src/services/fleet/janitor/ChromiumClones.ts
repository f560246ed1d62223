import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { treeBytes } from "../../platform/Files.js"
import type { Candidate, Skip } from "./BuildCaches.js"

/** macOS keeps its per-user caches beside $TMPDIR: `/private/var/folders/xx/yyyy/{T,C,X}`. */
export const defaultCloneRoots = () => [path.join(path.dirname(os.tmpdir()), "X")]

/**
 * chromium_clones: the bundle clones macOS makes to validate a browser's code signature at launch
 * (`<root>/<bundle id>.code_sign_clone/`), left behind when the browser exits uncleanly. Eligible past
 * min_age (a running browser refreshes its clone). Linux makes no such clones: nothing is eligible there.
 */
export const scanChromiumClones = (options: {
  readonly platform: NodeJS.Platform
  readonly roots: ReadonlyArray<string>
  readonly minAgeSeconds: number
  readonly nowMs: number
}) => {
  const candidates: Array<Candidate> = []
  const skipped: Array<Skip> = []
  if (options.platform !== "darwin") return { candidates, skipped, scanned: 0, applicable: false }
  let scanned = 0
  for (const root of options.roots) {
    let entries: Array<fs.Dirent> = []
    try {
      entries = fs.readdirSync(root, { withFileTypes: true })
    } catch {}
    for (const entry of entries) {
      scanned++
      if (!entry.isDirectory() || !entry.name.endsWith(".code_sign_clone")) continue
      const dir = path.join(root, entry.name)
      if (options.nowMs - fs.lstatSync(dir).mtimeMs < options.minAgeSeconds * 1000)
        skipped.push({ path: dir, reason: "too_young" })
      else candidates.push({ path: dir, bytes: treeBytes(dir), reason: "code_sign_clone" })
    }
  }
  return { candidates, skipped, scanned, applicable: true }
}
