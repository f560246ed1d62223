import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Effect } from "effect"

/** A lock older than this whose holder process is gone was left by a crash and is broken. */
const STALE_LOCK_MILLIS = 10_000
/** How long a writer waits for a lock before failing. */
const LOCK_WAIT_MILLIS = 30_000

/** Whether process `pid` exists (EPERM: it does, owned by someone else). */
export const processAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (cause) {
    return (cause as { code?: string }).code === "EPERM"
  }
}

/**
 * Runs `critical` holding the lock file `lock`: created with O_EXCL, holding the holder's pid, removed
 * after. Processes and fibers alike wait for it (polling every few milliseconds, at most 30 s); a lock older
 * than 10 s whose holder process is gone (a crash) is broken. Hold it for short critical sections only.
 */
export const withFileLock = async <A>(lock: string, critical: () => Promise<A>): Promise<A> => {
  await acquireFileLock(lock)
  try {
    return await critical()
  } finally {
    await fs.rm(lock, { force: true })
  }
}

/**
 * `critical` as an Effect holding the lock file `lock` (the same lock as withFileLock): released however it ends,
 * interrupted included. A lock that cannot be taken fails with `onLockError` of the cause.
 */
export const withFileLockEffect = <A, E, R, E2>(
  lock: string,
  critical: Effect.Effect<A, E, R>,
  onLockError: (cause: unknown) => E2
): Effect.Effect<A, E | E2, R> =>
  Effect.acquireUseRelease(
    Effect.tryPromise({ try: () => acquireFileLock(lock), catch: onLockError }),
    () => critical,
    () => Effect.promise(() => fs.rm(lock, { force: true }))
  )

const acquireFileLock = async (lock: string): Promise<void> => {
  await fs.mkdir(path.dirname(lock), { recursive: true })
  const deadline = Date.now() + LOCK_WAIT_MILLIS
  for (;;) {
    try {
      const handle = await fs.open(lock, "wx", 0o600)
      try {
        await handle.writeFile(String(process.pid))
      } finally {
        await handle.close()
      }
      break
    } catch (cause) {
      if ((cause as { code?: string }).code !== "EEXIST") throw cause
      const holder = await fs
        .readFile(lock, "utf8")
        .then((text) => Number(text))
        .catch(() => undefined)
      const stat = await fs.stat(lock).catch(() => undefined)
      if (holder !== undefined && stat !== undefined && Date.now() - stat.mtimeMs > STALE_LOCK_MILLIS) {
        if (!Number.isInteger(holder) || holder <= 0 || !processAlive(holder)) {
          await fs.rm(lock, { force: true })
          continue
        }
      }
      if (Date.now() > deadline) throw new Error(`timed out waiting for the lock ${path.basename(lock)}`)
      await new Promise((resolve) => setTimeout(resolve, 2 + Math.random() * 8))
    }
  }
}
