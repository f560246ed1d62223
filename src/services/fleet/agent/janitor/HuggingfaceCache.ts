import * as fs from "node:fs"
import * as path from "node:path"
import type { Candidate, Skip } from "./BuildCaches.js"
import type { ScanBudget } from "./ScanBudget.js"

const list = (dir: string): Array<fs.Dirent> => {
  try {
    return fs.readdirSync(dir, { withFileTypes: true })
  } catch {
    return []
  }
}

/** Every file under `dir` (recursively), as paths relative to it. */
const filesUnder = (dir: string, prefix = ""): Array<string> =>
  list(path.join(dir, prefix)).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(dir, path.join(prefix, entry.name)) : [path.join(prefix, entry.name)]
  )

/** Blob names the snapshots present in a repo point at (through their symlinks). */
export const referencedBlobs = (repo: string): Set<string> => {
  const referenced = new Set<string>()
  const blobs = path.join(repo, "blobs")
  for (const snapshot of list(path.join(repo, "snapshots"))) {
    const root = path.join(repo, "snapshots", snapshot.name)
    for (const file of filesUnder(root)) {
      try {
        const target = path.resolve(path.dirname(path.join(root, file)), fs.readlinkSync(path.join(root, file)))
        if (path.dirname(target) === blobs) referenced.add(path.basename(target))
      } catch {
        // Not a symlink: a real file in a snapshot references no blob.
      }
    }
  }
  return referenced
}

const refsOf = (repo: string) =>
  new Set(
    filesUnder(path.join(repo, "refs")).flatMap((ref) => {
      try {
        return [fs.readFileSync(path.join(repo, "refs", ref), "utf8").trim()]
      } catch {
        return []
      }
    })
  )

/**
 * huggingface_cache over a hub directory (`models--org--name/{blobs,snapshots/<rev>/…,refs/<name>}`):
 * a blob is a candidate when no snapshot present links to it; a snapshot no ref names is a candidate
 * only when the policy says so (`delete_unreferenced_snapshots: true`), and the blobs it alone used go
 * in a later pass, once it is gone; an `.incomplete` download only past min_age. A blob a snapshot
 * references is never a candidate.
 */
export const scanHuggingfaceCache = (options: {
  readonly root: string
  readonly minAgeSeconds: number
  readonly nowMs: number
  readonly deleteUnreferencedSnapshots: boolean
  readonly budget: ScanBudget
  /** The last repo directory a pass finished; repos are visited in name order after it. */
  readonly cursor: string | null
}) => {
  const candidates: Array<Candidate> = []
  const skipped: Array<Skip> = []
  let scanned = 0
  let last = options.cursor
  const repos = list(options.root)
    .filter((entry) => entry.isDirectory() && /^(models|datasets|spaces)--/.test(entry.name))
    .map((entry) => entry.name)
    .sort()
  for (const name of repos) {
    if (options.cursor !== null && name <= options.cursor) continue
    const repo = path.join(options.root, name)
    const referenced = referencedBlobs(repo)
    const blobs = list(path.join(repo, "blobs"))
    const snapshots = list(path.join(repo, "snapshots"))
    // A repo is scanned whole or not at all, so its references and its blobs are judged together; the
    // first repo of a pass is always scanned, so a repo larger than the budget cannot stall the cleaner.
    if (!options.budget.charge(blobs.length + snapshots.length + 1) && scanned > 0)
      return { candidates, skipped, scanned, cursor: last }
    scanned += blobs.length + snapshots.length + 1
    for (const blob of blobs) {
      const file = path.join(repo, "blobs", blob.name)
      const stat = fs.lstatSync(file, { throwIfNoEntry: false })
      if (stat === undefined || !stat.isFile()) continue
      const found = { path: file, bytes: stat.size, dev: stat.dev, ino: stat.ino, directory: false }
      if (blob.name.endsWith(".incomplete")) {
        if (options.nowMs - stat.mtimeMs < options.minAgeSeconds * 1000)
          skipped.push({ path: file, reason: "incomplete_download_in_progress" })
        else candidates.push({ ...found, reason: "hf_incomplete_download" })
      } else if (referenced.has(blob.name)) skipped.push({ path: file, reason: "referenced_by_snapshot" })
      else candidates.push({ ...found, reason: "hf_unreferenced_blob" })
    }
    const refs = refsOf(repo)
    for (const snapshot of snapshots) {
      if (refs.has(snapshot.name)) continue
      const dir = path.join(repo, "snapshots", snapshot.name)
      const stat = fs.lstatSync(dir, { throwIfNoEntry: false })
      if (stat === undefined || !stat.isDirectory()) continue
      if (options.deleteUnreferencedSnapshots)
        candidates.push({
          path: dir,
          bytes: 0,
          reason: "hf_unreferenced_snapshot",
          dev: stat.dev,
          ino: stat.ino,
          directory: true
        })
      else skipped.push({ path: dir, reason: "unreferenced_snapshot_kept_by_policy" })
    }
    last = name
  }
  return { candidates, skipped, scanned, cursor: null }
}

/** Deletion-time check: the blob is still referenced by no snapshot, or the snapshot by no ref. */
export const stillHuggingfaceEligible = (candidate: Candidate, minAgeMs: number, nowMs: number) => {
  try {
    if (candidate.reason === "hf_unreferenced_snapshot") {
      const repo = path.dirname(path.dirname(candidate.path))
      return !refsOf(repo).has(path.basename(candidate.path))
    }
    const repo = path.dirname(path.dirname(candidate.path))
    if (candidate.reason === "hf_incomplete_download") return nowMs - fs.lstatSync(candidate.path).mtimeMs >= minAgeMs
    return !referencedBlobs(repo).has(path.basename(candidate.path))
  } catch {
    return false
  }
}
