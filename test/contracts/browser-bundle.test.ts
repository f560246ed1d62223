import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { promisify } from "node:util"
import { HttpServer } from "@effect/platform"
import { assert, describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { HttpTest } from "../support/http.js"

// Issue 43: the web dashboard will import the typed clients in a browser, so `keel/clients` must bundle for one:
// esbuild with --platform=browser fails on any Node module (node:fs, better-sqlite3's bindings, …) it meets.

const root = fileURLToPath(new URL("../..", import.meta.url))
const esbuild = path.join(root, "node_modules/.bin/esbuild")
const run = promisify(execFile)

const bundle = (entry: string, outfile: string, ...more: ReadonlyArray<string>) =>
  Effect.promise(() =>
    run(
      esbuild,
      [entry, "--bundle", "--platform=browser", "--format=esm", `--outfile=${outfile}`, "--log-level=error", ...more],
      { cwd: root }
    )
  )

const scratch = () => fs.mkdtempSync(path.join(os.tmpdir(), "keel-bundle-"))

describe("keel/clients in a browser bundle", () => {
  it.effect(
    "src/clients.ts bundles with esbuild --platform=browser, with no Node module in it",
    () =>
      Effect.gen(function* () {
        const dir = scratch()
        const outfile = path.join(dir, "clients.js")
        const { stderr } = yield* bundle("src/clients.ts", outfile)
        assert.strictEqual(stderr, "")
        const code = fs.readFileSync(outfile, "utf8")
        for (const name of ["productClient", "groundTruthClient", "marketplaceClient", "controlPlaneClient"]) {
          assert.include(code, name)
        }
        assert.notMatch(code, /\b(from|require\()\s*["'](node:|better-sqlite3|simple-git)/)
        fs.rmSync(dir, { recursive: true, force: true })
      }),
    { timeout: 120_000 }
  )

  it.effect(
    "the package's keel/clients (dist/src/clients.js, as npm run build emits it) is made of the contracts alone",
    () =>
      Effect.gen(function* () {
        const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"))
        const entry = pkg.exports["./clients"].import as string
        const dir = scratch()
        const metafile = path.join(dir, "meta.json")
        yield* bundle(entry, path.join(dir, "clients.js"), `--metafile=${metafile}`)
        const inputs = Object.keys(JSON.parse(fs.readFileSync(metafile, "utf8")).inputs as Record<string, unknown>)
        // Keel's own inputs (the packages it reaches are effect's and @effect/platform's: the test above).
        const keel = inputs.filter((input) => input.startsWith("dist/"))
        expect(keel).toContain("dist/src/clients.js")
        expect(keel).toContain("dist/src/contracts/product/Api.js")
        expect(
          keel.filter((input) => input !== "dist/src/clients.js" && !input.startsWith("dist/src/contracts/"))
        ).toEqual([])
        fs.rmSync(dir, { recursive: true, force: true })
      }),
    { timeout: 120_000 }
  )
})

layer(HttpTest({ surfaces: ["product", "vault"] }), { timeout: "120 seconds" })("the bundled clients", (it) => {
  it.effect(
    "call a real server over fetch and read a refusal back into the contract's error class",
    () =>
      Effect.gen(function* () {
        const server = yield* HttpServer.HttpServer
        assert.strictEqual(server.address._tag, "TcpAddress")
        const port = server.address._tag === "TcpAddress" ? server.address.port : 0
        const dir = scratch()
        // Outside the project: the bundle must hold everything it loads (no node_modules to fall back on).
        const outfile = path.join(dir, "entry.js")
        yield* bundle("test/contracts/fixtures/browser-entry.ts", outfile)
        const entry = yield* Effect.promise(
          () => import(pathToFileURL(outfile).href) as Promise<typeof import("./fixtures/browser-entry.js")>
        )
        const answer = yield* Effect.promise(() => entry.probe(`http://127.0.0.1:${port}`))
        assert.deepStrictEqual(answer, {
          health: { status: "ok" },
          denied: { tag: "VaultDenied", code: "VAULT_DENIED" }
        })
        fs.rmSync(dir, { recursive: true, force: true })
      }),
    { timeout: 120_000 }
  )
})
