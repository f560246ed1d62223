import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

interface PackageJson {
  readonly name?: string
  readonly version?: string
}

/** Keel's own package folder (where its package.json is), found from this module in src/ or dist/. */
export const packageRoot = (): { readonly dir: string; readonly pkg: PackageJson } | undefined => {
  let dir = path.dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const candidate = path.join(dir, "package.json")
    if (fs.existsSync(candidate)) {
      const pkg = JSON.parse(fs.readFileSync(candidate, "utf8")) as PackageJson
      if (pkg.name === "keel") return { dir, pkg }
    }
    const parent = path.dirname(dir)
    if (parent === dir) return undefined
    dir = parent
  }
}

/** The version in Keel's package.json. */
export const packageVersion = (): string => packageRoot()?.pkg.version ?? "0.0.0"

/** A file shipped in the package's examples/ folder, if present. */
export const packageExample = (name: string): string | undefined => {
  const root = packageRoot()
  const file = root === undefined ? undefined : path.join(root.dir, "examples", name)
  return file !== undefined && fs.existsSync(file) ? file : undefined
}
