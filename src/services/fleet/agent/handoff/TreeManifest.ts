import * as fs from "node:fs/promises"
import * as path from "node:path"
import { fileDigest } from "../../../platform/Digest.js"

/**
 * A tree as the handoff compares it: every entry under a root (the root itself excluded), by relative POSIX path,
 * with its type, permission bits, and for a file its size and SHA-256, for a symlink its target. Symlinks are
 * never followed. Times and owners are not part of it (a handoff is byte- and mode-exact, not a backup).
 */
export type RootEntry =
  | { readonly path: string; readonly type: "dir"; readonly mode: number }
  | {
      readonly path: string
      readonly type: "file"
      readonly mode: number
      readonly size: number
      readonly sha256: string
    }
  | { readonly path: string; readonly type: "symlink"; readonly target: string }

export type TreeManifest = ReadonlyArray<RootEntry>

const sha256Of = async (file: string) => (await fileDigest(file)).sha256

/** What an entry on disk is (lstat: a symlink is itself), or undefined when nothing is there. */
export const entryAt = async (root: string, relative: string): Promise<RootEntry | undefined> => {
  const full = path.join(root, relative)
  const stat = await fs.lstat(full).catch(() => undefined)
  if (stat === undefined) return undefined
  if (stat.isSymbolicLink()) return { path: relative, type: "symlink", target: await fs.readlink(full) }
  if (stat.isDirectory()) return { path: relative, type: "dir", mode: stat.mode & 0o7777 }
  if (stat.isFile())
    return { path: relative, type: "file", mode: stat.mode & 0o7777, size: stat.size, sha256: await sha256Of(full) }
  throw new Error(`${full}: not a file, directory or symlink (sockets, devices and fifos are not handed off)`)
}

/** The manifest of `root`, sorted by path (a parent before its children). */
export const manifestOf = async (root: string): Promise<TreeManifest> => {
  const entries: Array<RootEntry> = []
  const walk = async (relative: string) => {
    const names = (await fs.readdir(path.join(root, relative))).sort()
    for (const name of names) {
      const child = relative === "" ? name : `${relative}/${name}`
      const entry = await entryAt(root, child)
      if (entry === undefined) continue
      entries.push(entry)
      if (entry.type === "dir") await walk(child)
    }
  }
  await walk("")
  return entries.sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0))
}

/** Whether two entries are the same thing (type, mode, bytes or target). */
export const sameEntry = (x: RootEntry, y: RootEntry) => {
  if (x.type !== y.type || x.path !== y.path) return false
  if (x.type === "symlink") return y.type === "symlink" && x.target === y.target
  if (x.type === "dir") return y.type === "dir" && x.mode === y.mode
  return y.type === "file" && x.mode === y.mode && x.size === y.size && x.sha256 === y.sha256
}

/** How two manifests differ: paths only in the first, only in the second, and present in both but different. */
export const diffManifests = (expected: TreeManifest, actual: TreeManifest) => {
  const byPath = new Map(actual.map((entry) => [entry.path, entry]))
  const missing: Array<string> = []
  const changed: Array<string> = []
  for (const entry of expected) {
    const found = byPath.get(entry.path)
    if (found === undefined) missing.push(entry.path)
    else if (!sameEntry(entry, found)) changed.push(entry.path)
    byPath.delete(entry.path)
  }
  return { missing, unexpected: [...byPath.keys()].sort(), changed }
}

export const manifestsEqual = (x: TreeManifest, y: TreeManifest) => {
  const diff = diffManifests(x, y)
  return diff.missing.length === 0 && diff.unexpected.length === 0 && diff.changed.length === 0
}
