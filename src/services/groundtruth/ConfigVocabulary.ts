/**
 * Everyday words for the keys of common manifests and configuration files, so a question phrased as a
 * user would ("which Node versions does it support?") meets the key that answers it (`engines`). Built
 * from the ecosystems' own documentation of these files (npm's package.json, Cargo's manifest format,
 * PEP 621, GitHub Actions workflow syntax, tsconfig, Docker Compose), never from any question set. The
 * words are indexed beside the chunk (a hidden column), never shown in it. docs/groundtruth.md lists them.
 */

/** Words for a whole file, by its name (or a path pattern). */
export const FILE_WORDS: ReadonlyArray<readonly [RegExp, string]> = [
  [/(^|\/)package\.json$/, "npm package manifest node module"],
  [/(^|\/)Cargo\.toml$/, "rust crate cargo manifest package"],
  [/(^|\/)pyproject\.toml$/, "python project package manifest"],
  [/(^|\/)tsconfig[^/]*\.json$/, "typescript compiler configuration"],
  [/(^|\/)\.github\/workflows\/[^/]+\.ya?ml$/, "github actions ci continuous integration workflow pipeline"],
  [/(^|\/)(docker-)?compose[^/]*\.ya?ml$/, "docker compose containers services"],
  [/(^|\/)\.?(prettierrc|eslintrc|biome|renovate|babel\.config|\.babelrc)[^/]*$/, "configuration settings"]
]

/** Words for a key, wherever it appears in a key path (lower-case key → words). */
export const KEY_WORDS: ReadonlyMap<string, string> = new Map([
  // package.json (docs.npmjs.com/cli/configuring-npm/package-json)
  ["name", "package name called"],
  ["version", "current version release number"],
  ["description", "summary what it is"],
  ["keywords", "tags topics"],
  ["homepage", "website url documentation site"],
  ["bugs", "issue tracker report problems"],
  ["license", "license licence legal terms copyright open source"],
  ["author", "author maintainer who wrote"],
  ["contributors", "people authors maintainers"],
  ["funding", "sponsor donate support financially"],
  ["files", "published files included in the package tarball"],
  ["main", "entry point main file require"],
  ["module", "esm entry point import"],
  ["browser", "browser build bundle field"],
  ["exports", "entry points subpath exports import require conditions"],
  ["imports", "internal import aliases"],
  ["types", "typescript type definitions declarations typings"],
  ["typings", "typescript type definitions declarations"],
  ["bin", "command line executable cli binary installed command"],
  ["man", "manual pages"],
  ["scripts", "npm run commands tasks build test lint scripts"],
  ["config", "configuration settings"],
  ["dependencies", "dependencies packages libraries required installed runtime"],
  ["devdependencies", "development dependencies dev tools build test tooling"],
  ["peerdependencies", "peer dependencies compatible host versions required alongside"],
  ["peerdependenciesmeta", "optional peer dependencies"],
  ["optionaldependencies", "optional dependencies"],
  ["bundledependencies", "bundled dependencies"],
  ["overrides", "override dependency versions"],
  ["engines", "supported node versions runtime requirement minimum node version"],
  ["os", "supported operating systems platforms"],
  ["cpu", "supported cpu architectures"],
  ["private", "not published private package"],
  ["publishconfig", "publish registry settings"],
  ["workspaces", "monorepo workspaces packages"],
  ["repository", "source code repository git url"],
  ["type", "module format esm commonjs"],
  ["sideeffects", "tree shaking side effects"],
  ["packagemanager", "package manager pnpm yarn npm version"],
  // Cargo.toml (doc.rust-lang.org/cargo/reference/manifest.html)
  ["package", "package metadata crate"],
  ["edition", "rust edition language edition"],
  ["rust-version", "minimum supported rust version msrv compiler"],
  ["features", "optional features feature flags cargo features"],
  ["dev-dependencies", "development test dependencies"],
  ["build-dependencies", "build script dependencies"],
  ["profile", "build profile compiler optimization settings"],
  ["release", "release build optimized"],
  ["opt-level", "optimization level"],
  ["lto", "link time optimization"],
  ["debug", "debug symbols debugging information"],
  ["codegen-units", "parallel code generation units"],
  ["workspace", "workspace members crates monorepo"],
  ["members", "workspace members crates"],
  ["autotests", "automatic test discovery"],
  ["exclude", "excluded files"],
  ["include", "included files"],
  ["documentation", "documentation docs url"],
  ["readme", "readme file"],
  ["categories", "crates.io categories"],
  ["target", "target platform specific"],
  // pyproject.toml (PEP 621)
  ["project", "project metadata"],
  ["requires-python", "supported python versions minimum python"],
  ["optional-dependencies", "extras optional dependencies"],
  ["build-system", "build backend requirements"],
  ["tool", "tool settings configuration"],
  // GitHub Actions (docs.github.com/actions/reference/workflow-syntax-for-github-actions)
  ["on", "triggers events when the workflow runs push pull request schedule"],
  ["push", "on push commits branches"],
  ["pull_request", "pull requests prs"],
  ["schedule", "scheduled cron nightly periodic"],
  ["workflow_dispatch", "manual trigger run manually"],
  ["jobs", "ci jobs"],
  ["runs-on", "runner operating system machine os"],
  ["strategy", "build matrix strategy"],
  ["matrix", "matrix operating systems versions combinations tested"],
  ["steps", "steps commands run"],
  ["env", "environment variables"],
  ["permissions", "token permissions access"],
  ["concurrency", "concurrency cancel in progress runs"],
  ["timeout-minutes", "timeout time limit"],
  ["services", "service containers"],
  ["uses", "action used"],
  // tsconfig.json (typescriptlang.org/tsconfig)
  ["compileroptions", "compiler options typescript settings"],
  ["strict", "strict type checking mode"],
  ["outdir", "output directory compiled files"],
  ["rootdir", "source root directory"],
  ["moduleresolution", "module resolution imports"],
  ["paths", "path aliases mapping"],
  ["declaration", "emit type declarations d.ts"],
  ["sourcemap", "source maps debugging"],
  ["lib", "library type definitions available apis"],
  ["references", "project references"],
  // Docker Compose (docs.docker.com/compose/compose-file)
  ["image", "container image"],
  ["ports", "exposed ports port mapping"],
  ["volumes", "volumes mounted storage data"],
  ["environment", "environment variables"],
  ["depends_on", "startup order depends"],
  ["healthcheck", "health check liveness"],
  ["restart", "restart policy"]
])

/** The hidden words of a file's chunk under a key path. */
export const configWords = (file: string, keyPath: ReadonlyArray<string>) => {
  const out: Array<string> = []
  for (const [pattern, text] of FILE_WORDS) if (pattern.test(file)) out.push(text)
  const seen = new Set<string>()
  for (const key of keyPath.flatMap((k) => k.split("."))) {
    const words = KEY_WORDS.get(key.toLowerCase().replace(/^["']|["']$/g, ""))
    if (words !== undefined && !seen.has(words)) {
      seen.add(words)
      out.push(words)
    }
  }
  return out.join(" ")
}
