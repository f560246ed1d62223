import * as fs from "node:fs"

/** A target's declared runtime: a symlink, or a config file whose first line is the root. */
export interface RuntimeDeclaration {
  readonly kind: "symlink" | "config_file"
  readonly path: string
}

/** What the declared runtime points at now: a symlink's target, a config file's first line; null when absent. */
export const runtimeValue = (runtime: RuntimeDeclaration) => {
  try {
    return runtime.kind === "symlink"
      ? fs.readlinkSync(runtime.path)
      : (fs.readFileSync(runtime.path, "utf8").split("\n")[0]?.trim() ?? null)
  } catch {
    return null
  }
}

/** The mode a runtime config file keeps: the one it replaces, else 0644 (its application may be another user). */
const configFileMode = (file: string) => {
  try {
    return fs.statSync(file).mode & 0o7777
  } catch {
    return 0o644
  }
}

/**
 * Points the runtime at `root` atomically (a staged symlink or file renamed over it); null removes it. A config
 * file is given its mode explicitly, never the process umask's (the server's is 077, docs/security.md).
 */
export const setRuntime = (runtime: RuntimeDeclaration, root: string | null) => {
  if (root === null) return fs.rmSync(runtime.path, { force: true })
  const staged = `${runtime.path}.keel-handoff-${process.pid}`
  fs.rmSync(staged, { force: true })
  if (runtime.kind === "symlink") fs.symlinkSync(root, staged)
  else {
    fs.writeFileSync(staged, `${root}\n`)
    fs.chmodSync(staged, configFileMode(runtime.path))
  }
  fs.renameSync(staged, runtime.path)
}
