import * as fs from "node:fs/promises"
import * as path from "node:path"
import { entryAt, manifestOf, manifestsEqual, type RootEntry, sameEntry, type TreeManifest } from "./TreeManifest.js"

/**
 * The additive union of root B into root A, for a storage-root handoff (docs/handoff.md). The **winner** is the
 * root the object API served when the transaction began:
 *
 * - `a` serves: A is authoritative; only B-only entries are imported. A B entry under a path where A has a file or
 *   a symlink cannot be imported and is reported as a conflict (A kept).
 * - `b` serves: B wins shared paths (its bytes, mode, symlink target or kind replace A's), A-only entries remain.
 *   Where A has a directory and B a file or symlink, the directory stays — its A-only contents must remain — and
 *   B's entry is reported as a conflict (A kept).
 *
 * `planUnion` is pure; `checkpoint` saves what the union will overwrite; `applyUnion` and `rollbackUnion` are
 * idempotent (each step checks what is already there, and first removes the staged copies a killed run left), so
 * an interrupted run or rollback — even one killed in the middle of a file's copy — is finished by running it again.
 */

export type Winner = "a" | "b"

export interface UnionConflict {
  readonly path: string
  readonly kept: "a"
  readonly why: string
}

export interface UnionPlan {
  readonly winner: Winner
  /** B entries created in A (nothing there before), parents first. */
  readonly creates: ReadonlyArray<RootEntry>
  /** B entries that replace A's entry at the same path (winner b only), with A's entry before. */
  readonly replaces: ReadonlyArray<{ readonly from: RootEntry; readonly to: RootEntry }>
  readonly conflicts: ReadonlyArray<UnionConflict>
  /** A's manifest once the union is built. */
  readonly expected: TreeManifest
  /** The records that became newly authoritative: B-only entries when A served, A-only ones when B served. */
  readonly retained: ReadonlyArray<string>
}

const byPath = (manifest: TreeManifest) => new Map(manifest.map((entry) => [entry.path, entry]))
const ancestors = (p: string) => {
  const parts = p.split("/")
  return parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join("/"))
}
const sorted = (entries: Iterable<RootEntry>) =>
  [...entries].sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0))

export const planUnion = (a: TreeManifest, b: TreeManifest, winner: Winner): UnionPlan => {
  const inA = byPath(a)
  const result = new Map(inA)
  const creates: Array<RootEntry> = []
  const replaces: Array<{ from: RootEntry; to: RootEntry }> = []
  const conflicts: Array<UnionConflict> = []
  /** A path of the result under which nothing from B may go (A kept a non-directory there). */
  const blocked = new Set<string>()
  for (const entry of b) {
    const blockedBy = ancestors(entry.path).find((p) => blocked.has(p))
    if (blockedBy !== undefined) {
      conflicts.push({ path: entry.path, kept: "a", why: `${blockedBy} is not a directory in A` })
      continue
    }
    const mine = inA.get(entry.path)
    if (mine === undefined) {
      creates.push(entry)
      result.set(entry.path, entry)
      continue
    }
    if (sameEntry(mine, entry)) continue
    const keepA = (why: string) => {
      conflicts.push({ path: entry.path, kept: "a", why })
      if (mine.type !== "dir") blocked.add(entry.path)
    }
    if (winner === "a") {
      // Shared path: A is authoritative. Its non-directory blocks B's subtree there.
      if (mine.type !== "dir" && entry.type === "dir") keepA("A has a file or symlink where B has a directory")
      else if (mine.type !== "dir") blocked.add(entry.path)
      continue
    }
    if (mine.type === "dir" && entry.type !== "dir") {
      keepA("A has a directory where B has a file or symlink (its A-only contents remain)")
      continue
    }
    replaces.push({ from: mine, to: entry })
    result.set(entry.path, entry)
  }
  const inB = byPath(b)
  const retained =
    winner === "a"
      ? creates.map((entry) => entry.path)
      : a.filter((entry) => !inB.has(entry.path)).map((entry) => entry.path)
  return { winner, creates, replaces, conflicts, expected: sorted(result.values()), retained }
}

/** Where the checkpoint keeps a copy of A's file at `relative`. */
const savedCopy = (checkpointDir: string, relative: string) => path.join(checkpointDir, "saved", relative)

const copyExact = async (from: string, to: string, mode: number) => {
  await fs.mkdir(path.dirname(to), { recursive: true })
  const staged = `${to}.keel-handoff-${process.pid}`
  await fs.copyFile(from, staged)
  await fs.chmod(staged, mode)
  await fs.rename(staged, to)
}

const linkExact = async (target: string, at: string) => {
  const staged = `${at}.keel-handoff-${process.pid}`
  await fs.rm(staged, { force: true })
  await fs.symlink(target, staged)
  await fs.rename(staged, at)
}

/**
 * Staged copies a killed run left beside the entries it was placing (`name.keel-handoff-<pid>`, a file or a
 * symlink that never got its rename): removed before the same work runs again, or A never matches its plan and
 * a directory the union created cannot be removed. Only beside planned entries, and never a path in `keep`
 * (a tree may hold such a name of its own).
 */
const sweepStaged = async (root: string, entries: Iterable<RootEntry>, keep: ReadonlySet<string>) => {
  const planned = new Map<string, Set<string>>()
  for (const entry of entries) {
    const dir = path.posix.dirname(entry.path)
    planned.set(dir, (planned.get(dir) ?? new Set()).add(path.posix.basename(entry.path)))
  }
  for (const [dir, names] of planned) {
    const listed = await fs.readdir(path.join(root, dir)).catch(() => [] as Array<string>)
    for (const name of listed) {
      const staged = /^(.+)\.keel-handoff-\d+$/.exec(name)
      const relative = dir === "." ? name : `${dir}/${name}`
      if (staged === null || !names.has(staged[1] ?? "") || keep.has(relative)) continue
      const stat = await fs.lstat(path.join(root, relative)).catch(() => undefined)
      if (stat !== undefined && !stat.isDirectory()) await fs.rm(path.join(root, relative), { force: true })
    }
  }
}

const pathsOf = (manifest: TreeManifest) => new Set(manifest.map((entry) => entry.path))

/**
 * Saves what the union will change in A: a copy of every A file it overwrites (symlinks and directories are
 * recorded in the plan itself). Idempotent: a copy already saved with the right bytes is kept.
 */
export const checkpoint = async (aRoot: string, plan: UnionPlan, checkpointDir: string) => {
  await sweepStaged(
    path.join(checkpointDir, "saved"),
    plan.replaces.map(({ from }) => from),
    new Set()
  )
  for (const { from } of plan.replaces) {
    if (from.type !== "file") continue
    const copy = savedCopy(checkpointDir, from.path)
    const saved = await entryAt(path.dirname(copy), path.basename(copy))
    if (saved?.type === "file" && saved.sha256 === from.sha256) continue
    await copyExact(path.join(aRoot, from.path), copy, from.mode)
    const check = await entryAt(path.dirname(copy), path.basename(copy))
    if (check?.type !== "file" || check.sha256 !== from.sha256)
      throw new Error(`${from.path} changed while it was checkpointed (the fence should have held it)`)
  }
}

/** Puts `entry` (taken from `source`) at its path under `root`, replacing what is there; nothing when it already is. */
const place = async (root: string, entry: RootEntry, source: string) => {
  const at = path.join(root, entry.path)
  const present = await entryAt(root, entry.path)
  if (present !== undefined && sameEntry(present, entry)) return
  if (entry.type === "dir") {
    if (present?.type === "dir") return void (await fs.chmod(at, entry.mode))
    if (present !== undefined) await fs.rm(at, { force: true })
    await fs.mkdir(at)
    await fs.chmod(at, entry.mode)
    return
  }
  if (present?.type === "dir") throw new Error(`${entry.path}: a directory is in the way`)
  if (entry.type === "symlink") return void (await linkExact(entry.target, at))
  await copyExact(path.join(source, entry.path), at, entry.mode)
}

/** Builds the union on A from B, as planned (idempotent: an entry already in place is left). */
export const applyUnion = async (aRoot: string, bRoot: string, plan: UnionPlan) => {
  const placed = sorted([...plan.creates, ...plan.replaces.map((r) => r.to)])
  await sweepStaged(aRoot, placed, pathsOf(plan.expected))
  for (const entry of placed) await place(aRoot, entry, bRoot)
}

/**
 * Restores A to its checkpoint: what the union created is removed (children first; a directory only once empty),
 * what it replaced is put back from the saved copies, and A's manifest must then equal `checkpointManifest`.
 * Idempotent, so an interrupted rollback is finished by running it again.
 */
export const rollbackUnion = async (
  aRoot: string,
  plan: UnionPlan,
  checkpointDir: string,
  checkpointManifest: TreeManifest
) => {
  await sweepStaged(aRoot, [...plan.creates, ...plan.replaces.map((r) => r.from)], pathsOf(checkpointManifest))
  for (const entry of sorted(plan.creates).reverse()) {
    const at = path.join(aRoot, entry.path)
    const present = await entryAt(aRoot, entry.path)
    if (present === undefined) continue
    if (present.type === "dir") await fs.rmdir(at)
    else await fs.rm(at, { force: true })
  }
  const replaced = [...plan.replaces].sort((x, y) => (x.from.path < y.from.path ? 1 : -1))
  for (const { from } of replaced) {
    const at = path.join(aRoot, from.path)
    const present = await entryAt(aRoot, from.path)
    if (present !== undefined && sameEntry(present, from)) continue
    if (present?.type === "dir" && from.type !== "dir") await fs.rmdir(at)
    if (from.type === "file") await copyExact(savedCopy(checkpointDir, from.path), at, from.mode)
    else await place(aRoot, from, aRoot)
  }
  const now = await manifestOf(aRoot)
  if (!manifestsEqual(checkpointManifest, now)) throw new Error("A does not match its checkpoint after the rollback")
}
