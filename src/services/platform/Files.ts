import * as fs from "node:fs"
import * as path from "node:path"

/** temp + fsync + rename + fsync of the directory: a reader sees the old file or the new one, never a mix. */
export const writeFileAtomically = (file: string, text: string, mode = 0o644) => {
  fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true })
  const temp = `${file}.tmp-${process.pid}`
  const fd = fs.openSync(temp, "w", mode)
  try {
    // The stated mode, not the mode less the process umask (the server's is 077).
    fs.fchmodSync(fd, mode)
    fs.writeSync(fd, text)
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
  fs.renameSync(temp, file)
  const dir = fs.openSync(path.dirname(path.resolve(file)), "r")
  try {
    fs.fsyncSync(dir)
  } finally {
    fs.closeSync(dir)
  }
}

/**
 * Bytes under a directory by lstat, never following links; unreadable entries count as nothing.
 * `onEntry` is called once per entry visited (scan budgets charge it).
 */
export const treeBytes = (dir: string, onEntry: () => void = () => {}): number => {
  let total = 0
  const stack = [dir]
  while (stack.length > 0) {
    const current = stack.pop()!
    let entries: Array<fs.Dirent>
    try {
      entries = fs.readdirSync(current, { withFileTypes: true })
    } catch {
      continue
    }
    for (const entry of entries) {
      onEntry()
      const full = path.join(current, entry.name)
      let stat: fs.Stats
      try {
        stat = fs.lstatSync(full)
      } catch {
        continue
      }
      total += stat.size
      if (stat.isDirectory()) stack.push(full)
    }
  }
  return total
}
