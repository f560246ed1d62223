import * as fs from "node:fs"
import * as path from "node:path"

export interface LockRecord {
  readonly pid: number
  readonly acquired_at: number
  readonly heartbeat_at: number
}

export type LockOutcome =
  | { readonly kind: "held"; readonly recovered: boolean; readonly release: () => void; readonly beat: () => void }
  | { readonly kind: "busy"; readonly holder: LockRecord }
  /** An overdue lock was replaced but its retired holder still runs: scan, report, delete nothing. */
  | { readonly kind: "recovery"; readonly predecessor: number; readonly release: () => void; readonly beat: () => void }

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

const read = (file: string): LockRecord | undefined => {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8")) as LockRecord
  } catch {
    return undefined
  }
}

/**
 * The janitor's lock, shared by both writers (the watch timer and the queue agent) across processes:
 * a file created with O_EXCL holding the holder's pid and a heartbeat. A live holder with a fresh
 * heartbeat means busy. An overdue lock (no heartbeat for `overdueMs`) is replaced; its file is kept as
 * `janitor.lock.retired` while the retired holder is still alive, and the new pass deletes nothing
 * until the kernel no longer reports that process.
 */
export const acquireLock = (stateDir: string, overdueMs: number, now = Date.now()): LockOutcome => {
  fs.mkdirSync(stateDir, { recursive: true })
  const file = path.join(stateDir, "janitor.lock")
  const retired = path.join(stateDir, "janitor.lock.retired")
  const record = (): LockRecord => ({ pid: process.pid, acquired_at: now, heartbeat_at: now })
  const handles = () => ({
    release: () => {
      const current = read(file)
      if (current?.pid === process.pid) fs.rmSync(file, { force: true })
    },
    beat: () => {
      const current = read(file)
      if (current?.pid !== process.pid) return
      const temp = `${file}.beat-${process.pid}`
      fs.writeFileSync(temp, JSON.stringify({ ...current, heartbeat_at: Date.now() }))
      fs.renameSync(temp, file)
    }
  })
  const create = () => {
    try {
      fs.writeFileSync(file, JSON.stringify(record()), { flag: "wx", mode: 0o644 })
      return true
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EEXIST") return false
      throw error
    }
  }
  const predecessor = read(retired)
  const predecessorAlive = predecessor !== undefined && predecessor.pid !== process.pid && processAlive(predecessor.pid)
  if (predecessor !== undefined && !predecessorAlive) fs.rmSync(retired, { force: true })

  if (create()) {
    return predecessorAlive
      ? { kind: "recovery", predecessor: predecessor!.pid, ...handles() }
      : { kind: "held", recovered: false, ...handles() }
  }
  const holder = read(file)
  if (holder !== undefined && processAlive(holder.pid) && now - holder.heartbeat_at <= overdueMs)
    return { kind: "busy", holder }
  // Overdue, dead or unreadable: retire it and take over.
  fs.renameSync(file, retired)
  if (!create()) {
    const winner = read(file)
    return { kind: "busy", holder: winner ?? { pid: 0, acquired_at: 0, heartbeat_at: 0 } }
  }
  const alive = holder !== undefined && holder.pid !== process.pid && processAlive(holder.pid)
  if (!alive) fs.rmSync(retired, { force: true })
  return alive
    ? { kind: "recovery", predecessor: holder!.pid, ...handles() }
    : { kind: "held", recovered: true, ...handles() }
}
