import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { Clock, Duration, Effect, type Scope } from "effect"
import { childEnv } from "../../../platform/ChildEnv.js"

export interface LockRecord {
  readonly pid: number
  readonly acquired_at: number
  readonly heartbeat_at: number
}

interface LockHandles {
  readonly release: () => void
  /** Touches the lock file's mtime (the heartbeat) to `atMs`, the time now. */
  readonly beat: (atMs: number) => void
  /** Resolves once the kernel lock on the lock file is held (at once where flock(1) is missing). */
  readonly witnessed: Promise<void>
}

export type LockOutcome =
  | ({ readonly kind: "held"; readonly recovered: boolean } & LockHandles)
  | { readonly kind: "busy"; readonly holder: LockRecord }
  /** An overdue lock was replaced but its retired holder may still run: scan, report, delete nothing. */
  | ({ readonly kind: "recovery"; readonly predecessor: number } & LockHandles)

/** Whether the kernel still has the process (a stopped process is alive; a zombie is not). */
export const processAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z"
  } catch {
    return true
  }
}

/** flock(1) (util-linux), found on PATH once; undefined where it is missing (macOS). */
const flockBinary = (() => {
  let found: string | null | undefined
  return () => {
    if (found === undefined) {
      const probe = spawnSync("flock", ["--version"], {
        stdio: "ignore",
        env: childEnv()
      })
      found = probe.status === 0 ? "flock" : null
    }
    return found ?? undefined
  }
})()

/**
 * Whether some process still holds the kernel lock on `file`'s inode: flock(1) tries it without waiting.
 * Undefined when that cannot be asked.
 */
export const kernelLocked = (file: string): boolean | undefined => {
  const flock = flockBinary()
  if (flock === undefined) return undefined
  const probe = spawnSync(flock, ["--exclusive", "--nonblock", "--conflict-exit-code", "75", file, "true"], {
    stdio: "ignore",
    env: childEnv()
  })
  return probe.status === 75 ? true : probe.status === 0 ? false : undefined
}

/**
 * Holds an exclusive flock on `file` for as long as this process lives: a flock(1) child that takes
 * the lock and then waits on a pipe from us. When we die (even by SIGKILL) the pipe closes, the child
 * exits and the kernel drops the lock; while we are alive (even stopped) it stays held.
 */
const witness = (file: string): { readonly ready: Promise<void>; readonly stop: () => void } => {
  const flock = flockBinary()
  if (flock === undefined) return { ready: Promise.resolve(), stop: () => {} }
  const child: ChildProcess = spawn(flock, ["--exclusive", file, "sh", "-c", "echo held; exec cat >/dev/null"], {
    stdio: ["pipe", "pipe", "ignore"],
    env: childEnv()
  })
  // Referenced until the lock is held (so a caller awaiting it keeps the process alive), then not: the
  // witness must never keep a finished process running.
  const detach = () => {
    child.unref()
    ;(child.stdin as unknown as { unref?: () => void })?.unref?.()
    ;(child.stdout as unknown as { unref?: () => void })?.unref?.()
  }
  const ready = new Promise<void>((resolve) => {
    const done = () => {
      detach()
      resolve()
    }
    child.stdout?.once("data", done)
    child.once("exit", done)
    child.once("error", done)
  })
  return {
    ready,
    stop: () => {
      child.stdin?.end()
      child.kill("SIGTERM")
    }
  }
}

const read = (file: string): LockRecord | undefined => {
  try {
    const record = JSON.parse(fs.readFileSync(file, "utf8")) as Omit<LockRecord, "heartbeat_at">
    // The heartbeat is the file's mtime: touching it keeps the inode the kernel lock is on.
    return { ...record, heartbeat_at: fs.statSync(file).mtimeMs }
  } catch {
    return undefined
  }
}

/** Whether the predecessor recorded in a retired lock may still run: its kernel lock, else its pid. */
const predecessorPresent = (retired: string, record: LockRecord | undefined) => {
  const locked = kernelLocked(retired)
  const alive = record !== undefined && record.pid !== process.pid && processAlive(record.pid)
  return locked === true || alive
}

/**
 * The janitor's lock, shared by both writers (the watch timer and the queue agent) across processes:
 * a file created with O_EXCL holding the holder's pid, its mtime the heartbeat, its inode flock-ed for
 * the holder's lifetime. A live holder with a fresh heartbeat means busy. An overdue lock (no heartbeat
 * for `overdueMs`) is replaced; its file is kept as `janitor.lock.retired`, and while the kernel still
 * reports the retired inode locked (or its process alive) the new pass deletes nothing.
 */
export const acquireLock = (stateDir: string, overdueMs: number, now: number = Date.now()): LockOutcome => {
  fs.mkdirSync(stateDir, { recursive: true })
  const file = path.join(stateDir, "janitor.lock")
  const retired = path.join(stateDir, "janitor.lock.retired")
  const handles = (): LockHandles => {
    const held = witness(file)
    return {
      release: () => {
        held.stop()
        const current = read(file)
        if (current?.pid === process.pid) fs.rmSync(file, { force: true })
      },
      beat: (atMs) => {
        const current = read(file)
        if (current?.pid !== process.pid) return
        const at = new Date(atMs)
        try {
          fs.utimesSync(file, at, at)
        } catch {}
      },
      witnessed: held.ready
    }
  }
  const create = () => {
    try {
      const fd = fs.openSync(file, "wx", 0o644)
      try {
        // 0644 as stated, not 0644 less the process umask (ctl serve's is 077, docs/security.md).
        fs.fchmodSync(fd, 0o644)
        fs.writeSync(fd, JSON.stringify({ pid: process.pid, acquired_at: now }))
      } finally {
        fs.closeSync(fd)
      }
      return true
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EEXIST") return false
      throw error
    }
  }
  const predecessor = read(retired)
  const predecessorAlive = fs.existsSync(retired) && predecessorPresent(retired, predecessor)
  if (fs.existsSync(retired) && !predecessorAlive) fs.rmSync(retired, { force: true })

  if (create()) {
    return predecessorAlive
      ? { kind: "recovery", predecessor: predecessor?.pid ?? 0, ...handles() }
      : { kind: "held", recovered: false, ...handles() }
  }
  const holder = read(file)
  if (holder === undefined) {
    // Created but not written yet (or unreadable): fresh means someone is taking it now.
    const mtime = fs.statSync(file, { throwIfNoEntry: false })?.mtimeMs
    if (mtime !== undefined && now - mtime <= overdueMs)
      return { kind: "busy", holder: { pid: 0, acquired_at: mtime, heartbeat_at: mtime } }
  } else if (processAlive(holder.pid) && now - holder.heartbeat_at <= overdueMs) return { kind: "busy", holder }
  // Overdue, dead or unreadable: retire it and take over.
  fs.renameSync(file, retired)
  if (!create()) {
    const winner = read(file)
    return { kind: "busy", holder: winner ?? { pid: 0, acquired_at: 0, heartbeat_at: 0 } }
  }
  const present = predecessorPresent(retired, holder)
  if (!present) fs.rmSync(retired, { force: true })
  return present
    ? { kind: "recovery", predecessor: holder?.pid ?? 0, ...handles() }
    : { kind: "held", recovered: true, ...handles() }
}

/** How often a held lock beats: well inside any overdue limit (the pass's is twice its seconds plus five). */
const HEARTBEAT = Duration.seconds(1)

/**
 * The lock for the life of the enclosing scope: taken at the Clock's time, beating every second on a fiber the
 * scope owns, and released (the beat stopped first) when the scope closes — on success, failure or interrupt.
 * A busy lock is only answered: there is nothing to release.
 */
export const scopedLock = (stateDir: string, overdueMs: number): Effect.Effect<LockOutcome, never, Scope.Scope> =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const lock = yield* Effect.acquireRelease(
      Effect.sync(() => acquireLock(stateDir, overdueMs, now)),
      (lock) => Effect.sync(() => (lock.kind === "busy" ? undefined : lock.release()))
    )
    if (lock.kind === "busy") return lock
    const beat = Effect.flatMap(Clock.currentTimeMillis, (at) => Effect.sync(() => lock.beat(at)))
    yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep(HEARTBEAT), beat)))
    return lock
  })
