import * as fs from "node:fs"
import * as path from "node:path"
import { Data, Effect } from "effect"

/**
 * Deletion that cannot be redirected. The janitor runs as root on hosts whose trees other users can
 * write, so between the scan and the deletion any directory may be swapped for a link. Every deletion
 * therefore walks down from the verified scan root one directory handle at a time, opening each
 * component with O_NOFOLLOW|O_DIRECTORY and naming children through the handle
 * (`/proc/self/fd/<fd>/<name>`, the kernel resolves it to the opened inode, like openat(2)), compares the
 * candidate's device and inode with what the scan recorded, never crosses a device or a mount point, and
 * removes a cache's CACHEDIR.TAG last, so a deletion that fails midway leaves a tagged (still
 * recognisable) cache, never a tagless half.
 *
 * Where /proc/self/fd is unavailable (macOS), handles fall back to paths re-checked with lstat at every
 * component: the same refusals, with a window between check and use that the Linux path does not have.
 */

export interface Identity {
  readonly dev: number
  readonly ino: number
}

export const identityKey = (id: Identity) => `${id.dev}:${id.ino}`

/** A cleaner's root as declared and as it is on disk (a root spelled through a link is resolved once). */
export interface ResolvedRoot {
  readonly requested: string
  readonly real: string
  readonly dev: number
  readonly ino: number
}

export const resolveRoot = (
  requested: string
): { readonly ok: true; readonly root: ResolvedRoot } | { readonly ok: false; readonly reason: string } => {
  const absolute = path.resolve(requested)
  try {
    const real = fs.realpathSync(absolute)
    const stat = fs.statSync(real)
    if (!stat.isDirectory()) return { ok: false, reason: "root_not_a_directory" }
    return { ok: true, root: { requested: absolute, real, dev: stat.dev, ino: stat.ino } }
  } catch (error) {
    return { ok: false, reason: `root_unreadable: ${(error as NodeJS.ErrnoException).code ?? "error"}` }
  }
}

/** The real path of `p`: its longest existing prefix resolved, the rest appended (for paths not created yet). */
export const realPathOf = (p: string): string => {
  const absolute = path.resolve(p)
  const rest: Array<string> = []
  let current = absolute
  for (;;) {
    try {
      return path.join(fs.realpathSync(current), ...rest.reverse())
    } catch {
      const parent = path.dirname(current)
      if (parent === current) return absolute
      rest.push(path.basename(current))
      current = parent
    }
  }
}

export const within = (child: string, parent: string) =>
  child === parent || child.startsWith(parent.endsWith(path.sep) ? parent : `${parent}${path.sep}`)

/** Mount points of this process's namespace (Linux: /proc/self/mountinfo); empty where unknown. */
export const mountPoints = (): ReadonlyArray<string> => {
  try {
    return fs
      .readFileSync("/proc/self/mountinfo", "utf8")
      .split("\n")
      .filter((line) => line.length > 0)
      .map((line) =>
        line.split(" ")[4]!.replace(/\\([0-7]{3})/g, (_, octal) => String.fromCharCode(parseInt(octal, 8)))
      )
  } catch {
    return []
  }
}

const O_DIR = fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW

const procHandles = (() => {
  let usable: boolean | undefined
  return () => {
    if (usable !== undefined) return usable
    try {
      const fd = fs.openSync("/", O_DIR)
      try {
        usable = fs.statSync(`/proc/self/fd/${fd}/.`).ino === fs.statSync("/").ino
      } finally {
        fs.closeSync(fd)
      }
    } catch {
      usable = false
    }
    return usable
  }
})()

/** An open directory: its handle, the in-tree path it was reached by, its identity. */
interface Dir {
  readonly fd: number
  readonly real: string
  readonly dev: number
  readonly ino: number
}

/** How to name `name` inside `dir` without resolving `dir`'s path again. */
const at = (dir: Dir, name: string) => (procHandles() ? `/proc/self/fd/${dir.fd}/${name}` : path.join(dir.real, name))

/** The directory itself, through its handle. */
const self = (dir: Dir) => (procHandles() ? `/proc/self/fd/${dir.fd}` : dir.real)

class Refused extends Error {
  constructor(readonly reason: string) {
    super(reason)
  }
}

const openDir = (where: string, real: string): Dir => {
  let fd: number
  try {
    fd = fs.openSync(where, O_DIR)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    // A link (ELOOP, or ENOTDIR with O_DIRECTORY) or a file where the scan saw a directory.
    throw new Refused(
      code === "ENOENT" ? "vanished" : code === "EACCES" || code === "EPERM" ? "unreadable" : "path_changed"
    )
  }
  const stat = fs.fstatSync(fd)
  if (!procHandles()) {
    // Without handles, check the path still names what was opened.
    const again = fs.lstatSync(real, { throwIfNoEntry: false })
    if (again === undefined || again.isSymbolicLink() || again.dev !== stat.dev || again.ino !== stat.ino) {
      fs.closeSync(fd)
      throw new Refused("path_changed")
    }
  }
  return { fd, real, dev: stat.dev, ino: stat.ino }
}

export interface RemoveGuards {
  /** Directories that must never be deleted or contained by a deletion, by identity, with why. */
  readonly protectedIds: ReadonlyMap<string, string>
  /** Mount points (real paths): a candidate holding one is refused. */
  readonly mountPoints: ReadonlyArray<string>
  /** Deadline (ms, on `now`'s clock): removal stops between entries past it, leaving the tag in place. */
  readonly deadlineMs?: number | undefined
  /** Yield to the event loop every so often (ms) so a lock heartbeat keeps beating. */
  readonly sliceMs?: number | undefined
  /** The time now (ms) for the deadline: the pass gives its Effect Clock; the wall clock otherwise. */
  readonly now?: (() => number) | undefined
}

export type RemoveResult =
  | { readonly ok: true; readonly bytes: number }
  | { readonly ok: false; readonly reason: string; readonly bytes: number; readonly deadline?: boolean }

export interface RemoveRequest {
  readonly root: ResolvedRoot
  /** The candidate's real path, under `root.real`. */
  readonly target: string
  /** Its identity when the scan found it. */
  readonly expected: Identity
  /** Removed last from a directory candidate (CACHEDIR.TAG), so a failed removal stays recognisable. */
  readonly keepLast?: string | undefined
  /** Sibling files removed with a file candidate once it is gone (an upload proof). */
  readonly companions?: ReadonlyArray<string> | undefined
  /**
   * The cleaner's own eligibility check, run on the opened candidate just before removal: `access` names
   * it through its handle (or its verified parent's, for a file), `stat` is its fstat. A string refuses.
   */
  readonly verify?: ((access: string, stat: fs.Stats) => string | undefined) | undefined
}

const yieldNow = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * Walks the candidate's tree through handles before anything is deleted: bytes on its own device, and
 * the first reason to refuse it (a protected directory inside, another device, a mount point).
 */
const survey = async (top: Dir, guards: RemoveGuards): Promise<{ bytes: number; refusal?: string }> => {
  const mounts = guards.mountPoints.filter((m) => within(m, top.real))
  if (mounts.length > 0) return { bytes: 0, refusal: "contains_mount_point" }
  let bytes = 0
  const stack: Array<Dir> = [top]
  const opened: Array<Dir> = []
  // Slices are event-loop fairness, not a rule: real (monotonic) time, whatever clock the deadline runs on.
  let sliceEnd = performance.now() + (guards.sliceMs ?? 20)
  try {
    while (stack.length > 0) {
      const dir = stack.pop()!
      const why = guards.protectedIds.get(identityKey(dir))
      if (why !== undefined) return { bytes, refusal: `contains_protected_${why}` }
      for (const name of fs.readdirSync(self(dir))) {
        const stat = fs.lstatSync(at(dir, name))
        if (stat.dev !== top.dev) return { bytes, refusal: "contains_mount_point" }
        bytes += stat.size
        if (stat.isDirectory()) {
          const child = openDir(at(dir, name), path.join(dir.real, name))
          opened.push(child)
          stack.push(child)
        }
      }
      if (performance.now() > sliceEnd) {
        await yieldNow()
        sliceEnd = performance.now() + (guards.sliceMs ?? 20)
      }
    }
    return { bytes }
  } finally {
    for (const dir of opened) fs.closeSync(dir.fd)
  }
}

/** Removes everything inside `top` (depth first, `keepLast` at the top removed after the rest). */
const empty = async (
  top: Dir,
  guards: RemoveGuards,
  keepLast: string | undefined,
  progress: { bytes: number }
): Promise<void> => {
  const now = guards.now ?? Date.now
  let sliceEnd = performance.now() + (guards.sliceMs ?? 20)
  const clear = async (dir: Dir, isTop: boolean): Promise<void> => {
    const names = fs.readdirSync(self(dir))
    if (isTop && keepLast !== undefined && names.includes(keepLast)) {
      names.splice(names.indexOf(keepLast), 1)
      names.push(keepLast)
    }
    for (const name of names) {
      if (guards.deadlineMs !== undefined && now() > guards.deadlineMs) throw new Refused("max_pass_seconds")
      if (performance.now() > sliceEnd) {
        await yieldNow()
        sliceEnd = performance.now() + (guards.sliceMs ?? 20)
      }
      const where = at(dir, name)
      const stat = fs.lstatSync(where)
      if (stat.dev !== top.dev) throw new Refused("contains_mount_point")
      if (stat.isDirectory()) {
        const child = openDir(where, path.join(dir.real, name))
        try {
          if (child.dev !== stat.dev || child.ino !== stat.ino) throw new Refused("path_changed")
          const why = guards.protectedIds.get(identityKey(child))
          if (why !== undefined) throw new Refused(`contains_protected_${why}`)
          await clear(child, false)
        } finally {
          fs.closeSync(child.fd)
        }
        fs.rmdirSync(where)
      } else {
        fs.unlinkSync(where)
      }
      progress.bytes += stat.size
    }
  }
  await clear(top, true)
}

/**
 * Removes one candidate (a directory tree or a file) found under `root`, or refuses with a reason and
 * deletes nothing of it. See the module comment for the guarantees.
 */
export const removeBeneath = async (request: RemoveRequest, guards: RemoveGuards): Promise<RemoveResult> => {
  const relative = path.relative(request.root.real, request.target)
  if (relative === "" || relative.startsWith("..") || path.isAbsolute(relative))
    return { ok: false, reason: "outside_root", bytes: 0 }
  const components = relative.split(path.sep)
  const name = components.pop()!
  const opened: Array<Dir> = []
  const progress = { bytes: 0 }
  try {
    const root = openDir(request.root.real, request.root.real)
    opened.push(root)
    if (root.dev !== request.root.dev || root.ino !== request.root.ino) throw new Refused("root_changed")
    let parent = root
    for (const component of components) {
      parent = openDir(at(parent, component), path.join(parent.real, component))
      opened.push(parent)
      if (parent.dev !== request.root.dev) throw new Refused("other_device")
    }
    const where = at(parent, name)
    const stat = fs.lstatSync(where, { throwIfNoEntry: false })
    if (stat === undefined) throw new Refused("vanished")
    if (stat.dev !== request.expected.dev || stat.ino !== request.expected.ino) throw new Refused("identity_changed")
    if (!stat.isDirectory()) {
      if (stat.isSymbolicLink()) throw new Refused("path_changed")
      const refusal = request.verify?.(where, stat)
      if (refusal !== undefined) throw new Refused(refusal)
      fs.unlinkSync(where)
      progress.bytes = stat.size
      for (const companion of request.companions ?? []) {
        const other = fs.lstatSync(at(parent, companion), { throwIfNoEntry: false })
        if (other?.isFile() === true) fs.unlinkSync(at(parent, companion))
      }
      return { ok: true, bytes: progress.bytes }
    }
    const top = openDir(where, path.join(parent.real, name))
    opened.push(top)
    if (top.dev !== request.expected.dev || top.ino !== request.expected.ino) throw new Refused("identity_changed")
    const refusal = request.verify?.(self(top), fs.fstatSync(top.fd))
    if (refusal !== undefined) throw new Refused(refusal)
    const surveyed = await survey(top, guards)
    if (surveyed.refusal !== undefined) throw new Refused(surveyed.refusal)
    await empty(top, guards, request.keepLast, progress)
    fs.rmdirSync(where)
    return { ok: true, bytes: progress.bytes }
  } catch (error) {
    if (error instanceof Refused)
      return error.reason === "max_pass_seconds"
        ? { ok: false, reason: error.reason, bytes: progress.bytes, deadline: true }
        : { ok: false, reason: error.reason, bytes: progress.bytes }
    const code = (error as NodeJS.ErrnoException).code
    return { ok: false, reason: `remove_failed: ${code ?? (error as Error).message}`, bytes: progress.bytes }
  } finally {
    for (const dir of opened.reverse()) fs.closeSync(dir.fd)
  }
}

/**
 * A removal that failed outside its own refusals (removeBeneath turns every file-system error it expects into a
 * refusal; this is what escaped it): the candidate may be partly gone, so its pending record is kept.
 */
export class RemovalFailed extends Data.TaggedError("RemovalFailed")<{
  readonly path: string
  readonly cause: unknown
}> {
  get reason() {
    const code = (this.cause as NodeJS.ErrnoException | undefined)?.code
    return `remove_failed: ${code ?? (this.cause instanceof Error ? this.cause.message : String(this.cause))}`
  }
}

/** removeBeneath as an Effect: its answer, or RemovalFailed when it rejects. */
export const removeBeneathEffect = (request: RemoveRequest, guards: RemoveGuards) =>
  Effect.tryPromise({
    try: () => removeBeneath(request, guards),
    catch: (cause) => new RemovalFailed({ path: request.target, cause })
  })

/**
 * The scan-time survey of a candidate directory, by path (the walk never follows links): its bytes on its
 * own device, and the first reason to refuse it. Advisory: deletion surveys again through handles.
 */
export const surveyPath = (
  dir: string,
  guards: Pick<RemoveGuards, "protectedIds" | "mountPoints">,
  onEntry: () => void = () => {}
): { readonly bytes: number; readonly refusal?: string } => {
  if (guards.mountPoints.some((m) => within(m, dir))) return { bytes: 0, refusal: "contains_mount_point" }
  const top = fs.lstatSync(dir)
  let bytes = 0
  const stack: Array<{ path: string; stat: fs.Stats }> = [{ path: dir, stat: top }]
  while (stack.length > 0) {
    const current = stack.pop()!
    const why = guards.protectedIds.get(identityKey(current.stat))
    if (why !== undefined) return { bytes, refusal: `contains_protected_${why}` }
    let names: Array<string>
    try {
      names = fs.readdirSync(current.path)
    } catch {
      continue
    }
    for (const name of names) {
      onEntry()
      const full = path.join(current.path, name)
      const stat = fs.lstatSync(full, { throwIfNoEntry: false })
      if (stat === undefined) continue
      if (stat.dev !== top.dev) return { bytes, refusal: "contains_mount_point" }
      bytes += stat.size
      if (stat.isDirectory()) stack.push({ path: full, stat })
    }
  }
  return { bytes }
}
