import * as fs from "node:fs"
import { type Identity, identityKey, realPathOf, within } from "./SafeRemove.js"

/**
 * A path no cleaner may delete, be inside of (unless it is that cleaner's own root), or contain: the
 * janitor's state, Keel's data, object store and vault, other cleaners' declared roots, the model hub,
 * the build tool's package registry, running jobs' trees. Matched by real path and by device+inode, so a
 * root declared through a link, or reached through a bind mount, is still recognised.
 */
export interface ProtectedPath {
  readonly declared: string
  readonly real: string
  readonly why: string
  readonly id: Identity | undefined
  /** The cleaner whose own root this is (its candidates live under it). */
  readonly owner: string | undefined
}

export const protect = (entries: ReadonlyArray<{ path: string; why: string; owner?: string }>) =>
  entries.map((entry): ProtectedPath => {
    const real = realPathOf(entry.path)
    const stat = fs.statSync(real, { throwIfNoEntry: false })
    return {
      declared: entry.path,
      real,
      why: entry.why,
      id: stat === undefined ? undefined : { dev: stat.dev, ino: stat.ino },
      owner: entry.owner
    }
  })

/** What `cleaner` must not touch, by identity (for the walks over a candidate's tree). */
export const protectedIdsFor = (paths: ReadonlyArray<ProtectedPath>, cleaner: string): ReadonlyMap<string, string> =>
  new Map(
    paths.flatMap((p) => (p.id === undefined || p.owner === cleaner ? [] : [[identityKey(p.id), p.why] as const]))
  )

/**
 * Why `cleaner` may not delete the candidate at real path `candidate`: it is a protected path; it lies
 * inside one (unless the cleaner's own root lies inside it too: a queue's work trees under the data dir
 * are that cleaner's to clean, a build cache under the data dir is not); or, a directory, it contains one.
 * Undefined when no protection applies.
 */
export const protectionRefusal = (
  paths: ReadonlyArray<ProtectedPath>,
  cleaner: { readonly name: string; readonly root: { readonly real: string } },
  candidate: string,
  isDirectory: boolean
): string | undefined => {
  for (const p of paths) {
    if (p.real === candidate) return `refused_${p.why}`
    if (p.owner === cleaner.name) continue
    if (within(candidate, p.real) && !within(cleaner.root.real, p.real)) return `inside_protected_${p.why}`
    if (isDirectory && within(p.real, candidate)) return `contains_protected_${p.why}`
  }
  return undefined
}
