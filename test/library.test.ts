import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

// The built package as an embedder sees it (issue 43): Node resolves "keel" and its subpaths by self-reference
// through package.json "exports" to dist/, so this needs `npm run build` first, like the other dist tests.
const root = fileURLToPath(new URL("..", import.meta.url))

const NAMESPACES = ["Cli", "Clients", "Fleet", "GroundTruth", "Http", "Layers", "Market", "Platform", "Product"]
const SUBPATHS = ["keel/market", "keel/groundtruth", "keel/product", "keel/fleet", "keel/layers"]
// Internals the old flat entry exposed; none may be reachable from the entry or any subpath, at any depth.
const INTERNALS = [
  "SqlDirect",
  "SyncSql",
  "Ed25519",
  "runProcess",
  "loadOrCreateKeyFile",
  "parseMasterKey",
  "makeVectorIndex",
  "makeGroupCommit",
  "tradeFastPath",
  "assignFastPath"
]

interface Surface {
  readonly entry: Record<string, ReadonlyArray<string> | null>
  readonly subpaths: Record<string, ReadonlyArray<string>>
}

/** Each module's export names; a namespace export (a plain module object) lists its members, a value lists null. */
const probe = (): Surface => {
  const script = `
    const members = (value) =>
      value !== null && typeof value === "object" && value[Symbol.toStringTag] === "Module" ? Object.keys(value) : null
    const entry = await import("keel")
    const subpaths = {}
    for (const name of ${JSON.stringify(SUBPATHS)}) subpaths[name] = Object.keys(await import(name))
    console.log(JSON.stringify({
      entry: Object.fromEntries(Object.entries(entry).map(([name, value]) => [name, members(value)])),
      subpaths
    }))`
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: root, encoding: "utf8" })
  return JSON.parse(out) as Surface
}

describe("the package entry (dist/src/index.js)", () => {
  it("is namespaces chosen on purpose, each a module with members; internals are in none of them", () => {
    expect(fs.existsSync(`${root}/dist/src/index.js`)).toBe(true)
    const surface = probe()
    expect(Object.keys(surface.entry).sort()).toEqual(NAMESPACES)
    for (const name of NAMESPACES) expect((surface.entry[name] ?? []).length).toBeGreaterThan(0)
    // What an embedder composes or calls is where the README says it is.
    expect(surface.entry.Layers).toEqual(expect.arrayContaining(["AppLive", "AppTest", "ServicesLive", "httpServer"]))
    expect(surface.entry.Market).toEqual(
      expect.arrayContaining(["Ledger", "Trading", "signRequest", "marketMigrations"])
    )
    expect(surface.entry.GroundTruth).toEqual(expect.arrayContaining(["Ingester", "Retriever", "GroundTruthApi"]))
    expect(surface.entry.Product).toEqual(expect.arrayContaining(["Assigner", "Collector", "ProductApi"]))
    expect(surface.entry.Fleet).toEqual(
      expect.arrayContaining(["FleetRegistry", "makeObjectApiClient", "fleetMigrations"])
    )
    expect(surface.entry.Platform).toEqual(
      expect.arrayContaining(["AppConfig", "loggerFromConfig", "ObjectStore", "Vault", "scrubEnvironBlock"])
    )
    expect(surface.entry.Clients).toEqual(expect.arrayContaining(["productClient", "marketplaceClient"]))
    const reachable = [
      ...Object.keys(surface.entry),
      ...Object.values(surface.entry).flatMap((members) => members ?? []),
      ...Object.values(surface.subpaths).flat()
    ]
    for (const internal of INTERNALS) expect(reachable).not.toContain(internal)
  }, 120_000) // a bound on a hang: loading the whole library takes seconds on a loaded machine

  it("serves each domain as a subpath equal to its namespace", () => {
    const surface = probe()
    const namespaceOf: Record<string, string> = {
      "keel/market": "Market",
      "keel/groundtruth": "GroundTruth",
      "keel/product": "Product",
      "keel/fleet": "Fleet",
      "keel/layers": "Layers"
    }
    for (const [subpath, namespace] of Object.entries(namespaceOf)) {
      expect([...(surface.subpaths[subpath] ?? [])].sort()).toEqual([...(surface.entry[namespace] ?? [])].sort())
    }
  }, 120_000)
})
