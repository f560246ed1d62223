import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { type Closure, closureOf, isNodeBuiltin, valueImports } from "../support/imports.js"

// Issue 43, item 1: the contracts (HttpApi definitions, wire schemas, tagged errors) and the typed clients built on
// them carry no runtime code. An embedder or a browser dashboard that imports `keel/clients` gets the clients, not
// SQLite, git, Node's file system or any service. These tests read the value-import closure from the sources.

const root = fileURLToPath(new URL("../..", import.meta.url))

/** Every HTTP surface Keel serves, each with its contract folder src/contracts/<surface>/ and its Api.ts. */
const SURFACES = ["market", "product", "groundtruth", "vault", "controlplane"] as const

/**
 * Surfaces whose contract does not pass yet, each with the reason, while the work that cleans it is under way.
 * A surface listed here must still fail (the test says so once it passes, so the list never goes stale).
 * Empty since the market and control-plane contracts moved (issue 43).
 */
const PENDING: Partial<Record<(typeof SURFACES)[number], string>> = {}

/** What no contract and no client may reach: code that runs a server, a database, git or a host. */
const FORBIDDEN_FILES = /^src\/(services|actors|http|layers|cli)\/|^src\/index\.ts$/
const FORBIDDEN_PACKAGES = /^(better-sqlite3|simple-git|@effect\/(sql-sqlite-node|platform-node(-shared)?))(\/|$)/

/** `@effect/platform`'s modules that describe an HTTP API (and, for the clients, call one). */
const HTTP_API_MODULES = new Set([
  "HttpApi",
  "HttpApiGroup",
  "HttpApiEndpoint",
  "HttpApiSchema",
  "HttpApiError",
  "HttpApiSecurity",
  "HttpApiMiddleware",
  "OpenApi"
])
const CLIENT_MODULES = new Set([...HTTP_API_MODULES, "HttpApiClient", "HttpClient", "HttpClientResponse"])

/**
 * Packages an HTTP contract (and the clients) may load: effect, and the HttpApi modules of @effect/platform.
 * Entity and workflow definitions (the market actor's protocol) may also load the definition modules of
 * @effect/rpc, @effect/cluster and @effect/workflow; no HTTP contract or client reaches them (checked below).
 */
const isEffect = (specifier: string) => specifier === "effect" || specifier.startsWith("effect/")
const DEFINITION_PACKAGES = /^@effect\/(rpc|cluster|workflow)(\/\w+)?$/

/** Why a closure is not runtime-free, one line per reason (empty: it is). */
const problemsOf = (closure: Closure, options: { readonly http: boolean; readonly platformNames: Set<string> }) => {
  const problems: Array<string> = [...closure.unresolved.map((u) => `unresolved import ${u}`)]
  for (const file of closure.files) {
    if (FORBIDDEN_FILES.test(file) || !(file.startsWith("src/contracts/") || file === "src/clients.ts")) {
      problems.push(`reaches ${file}`)
    }
  }
  for (const imported of closure.packages) {
    const where = `${imported.from} imports ${imported.specifier}`
    if (isNodeBuiltin(imported.specifier) || FORBIDDEN_PACKAGES.test(imported.specifier)) problems.push(where)
    else if (imported.specifier.startsWith("@effect/platform/")) {
      const module = imported.specifier.slice("@effect/platform/".length)
      if (!options.platformNames.has(module)) problems.push(where)
    } else if (imported.specifier === "@effect/platform") {
      const others = imported.names.filter((name) => !options.platformNames.has(name))
      if (imported.names.length === 0 || others.length > 0) problems.push(`${where} (${others.join(", ") || "*"})`)
    } else if (!isEffect(imported.specifier) && (options.http || !DEFINITION_PACKAGES.test(imported.specifier))) {
      problems.push(where)
    }
  }
  return problems
}

const contractFiles = (folder: string) =>
  fs
    .readdirSync(path.join(root, "src/contracts", folder))
    .filter((name) => name.endsWith(".ts"))
    .map((name) => `src/contracts/${folder}/${name}`)

describe("contracts and keel/clients are runtime-free", () => {
  it("reads value imports as they load, not type imports or text that looks like one", () => {
    const source = [
      'import type { A } from "./erased.js"',
      'import { type B } from "./kept-empty.js"',
      'import { C, type D, E as F } from "@effect/platform"',
      'import * as G from "./star.js"',
      'export type { H } from "./erased-too.js"',
      'export * from "./reexported.js"',
      'import "./side-effect.js"',
      '// a comment saying import x from "./not-an-import.js" is not one',
      'const text = "import y from ./nor-this.js"',
      'const lazy = () => import("./dynamic.js")'
    ].join("\n")
    expect(valueImports(source)).toEqual([
      { specifier: "./kept-empty.js", names: ["B"] },
      { specifier: "@effect/platform", names: ["C", "D", "E"] },
      { specifier: "./star.js", names: [] },
      { specifier: "./reexported.js", names: [] },
      { specifier: "./side-effect.js", names: [] },
      { specifier: "./dynamic.js", names: [] }
    ])
  })

  it("keel/clients (src/clients.ts) reaches contracts only, and every surface's", () => {
    const closure = closureOf(root, "src/clients.ts")
    expect(problemsOf(closure, { http: true, platformNames: CLIENT_MODULES })).toEqual([])
    for (const surface of SURFACES) expect(closure.files).toContain(`src/contracts/${surface}/Api.ts`)
    const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"))
    expect(pkg.exports["./clients"]).toEqual({ types: "./dist/src/clients.d.ts", import: "./dist/src/clients.js" })
  })

  for (const surface of SURFACES) {
    const pending = PENDING[surface]
    it(`${surface}: every file of src/contracts/${surface} is runtime-free${pending ? " (pending)" : ""}`, () => {
      const problems = contractFiles(surface).flatMap((file) =>
        problemsOf(closureOf(root, file), {
          http: file.endsWith("Api.ts"),
          platformNames: HTTP_API_MODULES
        })
      )
      if (pending === undefined) expect([...new Set(problems)]).toEqual([])
      else expect(problems, `${surface} is clean now: remove it from PENDING (${pending})`).not.toEqual([])
    })
  }

  it("every other contract folder (shared vocabulary, fleet schemas) is runtime-free too", () => {
    const folders = fs
      .readdirSync(path.join(root, "src/contracts"), { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && !(SURFACES as ReadonlyArray<string>).includes(entry.name))
      .map((entry) => entry.name)
    expect(folders).toContain("shared")
    const problems = folders
      .flatMap(contractFiles)
      .flatMap((file) => problemsOf(closureOf(root, file), { http: false, platformNames: HTTP_API_MODULES }))
    expect([...new Set(problems)]).toEqual([])
  })

  it("a contract reaching a service, Node or SQLite is caught (the check itself)", () => {
    const closure: Closure = {
      files: ["src/contracts/x/Api.ts", "src/services/market/Ledger.ts"],
      packages: [
        { from: "src/services/market/Ledger.ts", specifier: "better-sqlite3", names: [] },
        { from: "src/contracts/x/Api.ts", specifier: "node:fs", names: [] },
        { from: "src/contracts/x/Api.ts", specifier: "@effect/platform", names: ["HttpServerResponse"] },
        { from: "src/contracts/x/Api.ts", specifier: "@effect/cluster", names: ["Entity"] },
        { from: "src/contracts/x/Api.ts", specifier: "@effect/platform/HttpApiSchema", names: [] },
        { from: "src/contracts/x/Api.ts", specifier: "@effect/platform/HttpServer", names: [] }
      ],
      unresolved: []
    }
    expect(problemsOf(closure, { http: true, platformNames: HTTP_API_MODULES })).toEqual([
      "reaches src/services/market/Ledger.ts",
      "src/services/market/Ledger.ts imports better-sqlite3",
      "src/contracts/x/Api.ts imports node:fs",
      "src/contracts/x/Api.ts imports @effect/platform (HttpServerResponse)",
      "src/contracts/x/Api.ts imports @effect/cluster",
      "src/contracts/x/Api.ts imports @effect/platform/HttpServer"
    ])
    // An entity or workflow definition (not an HTTP contract) may load the definition modules.
    expect(
      problemsOf(
        {
          files: ["src/contracts/x/Flow.ts"],
          packages: [{ from: "src/contracts/x/Flow.ts", specifier: "@effect/workflow/Workflow", names: [] }],
          unresolved: []
        },
        { http: false, platformNames: HTTP_API_MODULES }
      )
    ).toEqual([])
  })
})
