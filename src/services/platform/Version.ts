import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

/** The version in Keel's package.json, found from this module whether it runs from src/ or dist/. */
export const packageVersion = (): string => {
  let dir = path.dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const candidate = path.join(dir, "package.json")
    if (fs.existsSync(candidate)) {
      const pkg = JSON.parse(fs.readFileSync(candidate, "utf8")) as { name?: string; version?: string }
      if (pkg.name === "keel" && typeof pkg.version === "string") return pkg.version
    }
    const parent = path.dirname(dir)
    if (parent === dir) return "0.0.0"
    dir = parent
  }
}
