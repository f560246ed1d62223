import * as fs from "node:fs"
import * as path from "node:path"
import type { Candidate, Skip } from "./BuildCaches.js"

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

const sizeOf = (file: string) => {
  try {
    return fs.lstatSync(file).size
  } catch {
    return 0
  }
}

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
}) => {
  const candidates: Array<Candidate> = []
  const skipped: Array<Skip> = []
  let scanned = 0
  for (const repoEntry of list(options.root)) {
    if (!repoEntry.isDirectory() || !/^(models|datasets|spaces)--/.test(repoEntry.name)) continue
    const repo = path.join(options.root, repoEntry.name)
    const referenced = referencedBlobs(repo)
    for (const blob of list(path.join(repo, "blobs"))) {
      scanned++
      const file = path.join(repo, "blobs", blob.name)
      if (!blob.isFile()) continue
      if (blob.name.endsWith(".incomplete")) {
        const young = options.nowMs - fs.lstatSync(file).mtimeMs < options.minAgeSeconds * 1000
        if (young) skipped.push({ path: file, reason: "incomplete_download_in_progress" })
        else candidates.push({ path: file, bytes: sizeOf(file), reason: "hf_incomplete_download" })
      } else if (referenced.has(blob.name)) skipped.push({ path: file, reason: "referenced_by_snapshot" })
      else candidates.push({ path: file, bytes: sizeOf(file), reason: "hf_unreferenced_blob" })
    }
    const refs = refsOf(repo)
    for (const snapshot of list(path.join(repo, "snapshots"))) {
      scanned++
      if (refs.has(snapshot.name)) continue
      const dir = path.join(repo, "snapshots", snapshot.name)
      if (options.deleteUnreferencedSnapshots)
        candidates.push({ path: dir, bytes: 0, reason: "hf_unreferenced_snapshot" })
      else skipped.push({ path: dir, reason: "unreferenced_snapshot_kept_by_policy" })
    }
  }
  return { candidates, skipped, scanned }
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
