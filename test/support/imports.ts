import * as fs from "node:fs"
import { builtinModules } from "node:module"
import * as path from "node:path"

/**
 * What a module loads when it runs: its value imports, read from the source. `import type` and `export type` are
 * erased; `import { type A } from "x"` is not (under verbatimModuleSyntax it still loads "x"), nor is a dynamic
 * `import("x")`. Read with a grammar-shaped regex over the import clause, so a `from "…"` in a comment or a string
 * is never taken for an import.
 */
export interface ModuleImport {
  readonly specifier: string
  /** The named bindings of `import { A, B as C } from` (original names), when the clause has any. */
  readonly names: ReadonlyArray<string>
}

const CLAUSE = String.raw`(?:\*\s+as\s+[\w$]+|\*|\{[^}]*\}|[\w$]+(?:\s*,\s*(?:\{[^}]*\}|\*\s+as\s+[\w$]+))?)`
const STATIC = new RegExp(String.raw`^[ \t]*(import|export)(\s+type)?\s+(${CLAUSE})\s*from\s*["']([^"']+)["']`, "gm")
const SIDE_EFFECT = /^[ \t]*import\s*["']([^"']+)["']/gm
const DYNAMIC = /\bimport\(\s*["']([^"']+)["']\s*\)/g

const namesOf = (clause: string) => {
  const braces = /\{([^}]*)\}/.exec(clause)
  if (braces === null) return []
  return braces[1]!
    .split(",")
    .map((item) => item.trim().replace(/^type\s+/, ""))
    .filter((item) => item.length > 0)
    .map((item) => item.split(/\s+as\s+/)[0]!.trim())
}

export const valueImports = (source: string): ReadonlyArray<ModuleImport> => {
  const found: Array<ModuleImport> = []
  for (const match of source.matchAll(STATIC)) {
    if (match[2] !== undefined) continue
    found.push({ specifier: match[4]!, names: namesOf(match[3]!) })
  }
  for (const match of source.matchAll(SIDE_EFFECT)) found.push({ specifier: match[1]!, names: [] })
  for (const match of source.matchAll(DYNAMIC)) found.push({ specifier: match[1]!, names: [] })
  return found
}

/** A relative specifier as the file it names (`./X.js` is `./X.ts`), relative to `root`; undefined if none. */
export const resolveModule = (root: string, from: string, specifier: string): string | undefined => {
  if (!specifier.startsWith(".")) return undefined
  const base = path.normalize(path.join(path.dirname(from), specifier)).replace(/\.js$/, "")
  for (const candidate of [`${base}.ts`, path.join(base, "index.ts")]) {
    if (fs.existsSync(path.join(root, candidate))) return candidate
  }
  return undefined
}

export interface Closure {
  /** Project files reached, relative to the root, the entry first. */
  readonly files: ReadonlyArray<string>
  /** Packages reached (bare specifiers), with the file that imports each and the names it takes. */
  readonly packages: ReadonlyArray<{ readonly from: string } & ModuleImport>
  /** Relative specifiers that name no file. */
  readonly unresolved: ReadonlyArray<string>
}

/** The transitive value-import closure of `entry` (a path relative to `root`). */
export const closureOf = (root: string, entry: string): Closure => {
  const files: Array<string> = []
  const packages: Array<{ readonly from: string } & ModuleImport> = []
  const unresolved: Array<string> = []
  const todo = [entry]
  const seen = new Set<string>()
  while (todo.length > 0) {
    const file = todo.shift()!
    if (seen.has(file)) continue
    seen.add(file)
    files.push(file)
    for (const imported of valueImports(fs.readFileSync(path.join(root, file), "utf8"))) {
      if (!imported.specifier.startsWith(".")) {
        packages.push({ from: file, ...imported })
        continue
      }
      const target = resolveModule(root, file, imported.specifier)
      if (target === undefined) unresolved.push(`${file}: ${imported.specifier}`)
      else todo.push(target)
    }
  }
  return { files, packages, unresolved }
}

const BUILTINS = new Set(builtinModules)

/** Whether a package specifier is one of Node's own modules (`node:fs`, or `fs` without the prefix). */
export const isNodeBuiltin = (specifier: string) =>
  specifier.startsWith("node:") || BUILTINS.has(specifier.split("/")[0]!)
