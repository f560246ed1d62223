import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ConfigProvider, Effect, type Exit } from "effect"
import { assert, beforeAll, describe, it, onTestFinished, vi } from "vitest"
import * as Yaml from "yaml"
import type * as Run from "../../src/cli/Run.js"
import { onTestDatabase } from "../support/pg-datadir.js"
import { runCtl } from "../support/server.js"

// Issue 43: a command builds only the services it uses. A service cannot be constructed without its module
// being imported, so a spy on the import of one module per domain (the retriever for ground truth, the token market
// for the marketplace, the readout for the product, the overview for the fleet) and of the every-domain
// graph (layers/Live.ts) shows what a command could have built. A module is imported once per process, so each
// command below is checked for the modules it adds to those its predecessors loaded: commands are ordered so
// that each one's domain is loaded last by it (ctl release key show first: it loads none).
const loaded = vi.hoisted(() => new Set<string>())
vi.mock("../../src/services/groundtruth/Retriever.js", async (original) => {
  loaded.add("Retriever")
  return await original()
})
vi.mock("../../src/services/market/TokenMarket.js", async (original) => {
  loaded.add("TokenMarket")
  return await original()
})
vi.mock("../../src/services/product/Readout.js", async (original) => {
  loaded.add("Readout")
  return await original()
})
vi.mock("../../src/services/fleet/control/overview/Overview.js", async (original) => {
  loaded.add("Overview")
  return await original()
})
vi.mock("../../src/layers/Live.js", async (original) => {
  loaded.add("Live")
  return await original()
})

/** What the command loads of the watched modules, beyond what was loaded before it. */
const added = async (run: () => Promise<number>) => {
  const before = new Set(loaded)
  assert.strictEqual(await run(), 0)
  return [...loaded].filter((m) => !before.has(m)).sort()
}

// ctl's own entry, not the "keel" index: the index imports every module, which would hide what a command loads.
// Imported afresh: the test files before this one in the worker (vitest.config.ts: isolate false) loaded the
// watched modules already, and a module loaded before the spy counts as loaded by nothing.
let run: typeof Run
beforeAll(async () => {
  vi.resetModules()
  run = await import("../../src/cli/Run.js")
})

// The data dir's database, as runCli opens it: under test:pg the schema the spawned `ctl` above used (pg-datadir.ts).
const inProcess = async (args: ReadonlyArray<string>, given: Record<string, string>) => {
  const env = await onTestDatabase(given)
  const exit = await Effect.runPromise(
    run
      .ctlMain(["node", "ctl", ...args])
      .pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))), Effect.exit)
  )
  return run.exitCodeOf(exit as Exit.Exit<unknown, unknown>)
}

describe("ctl builds only what a command uses", () => {
  it("each command group loads its own domain's services, no other domain's, and not the every-domain graph", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-narrow-"))
    const registry = path.join(dir, "registry.yml")
    fs.writeFileSync(
      registry,
      Yaml.stringify({ version: 1, settings: {}, targets: [{ name: "box", os: "linux", channel: "local" }] })
    )
    const env = {
      KEEL_DATA_DIR: path.join(dir, "data"),
      KEEL_REGISTRY: registry,
      KEEL_DEMO_DATA: "false",
      KEEL_LOG_LEVEL: "warning"
    }
    // The key is made by the binary, in a process of its own: this process must not load the services for it.
    onTestFinished(() => fs.rmSync(dir, { recursive: true, force: true }))
    const made = await runCtl(["release", "key", "create", "--item", "signing", "--json"], { ...process.env, ...env })
    assert.strictEqual(made.code, 0, made.stderr)
    const ctl =
      (...args: ReadonlyArray<string>) =>
      () =>
        inProcess(args, env)

    // release key show reads one vault item: nothing of any domain.
    assert.deepStrictEqual(await added(ctl("release", "key", "show", "--item", "signing")), [])
    // vault: the vault and the fleet's grants (registry, grant issuer) — not the product, market or ground truth.
    assert.deepStrictEqual(await added(ctl("vault", "item", "list", "--json")), ["Overview"])
    // product: its readouts — not the market or ground truth.
    assert.deepStrictEqual(await added(ctl("product", "summary", "--site", "s1", "--json")), ["Readout"])
    // market: the marketplace — not ground truth.
    assert.deepStrictEqual(await added(ctl("market", "audit", "--json")), ["TokenMarket"])
    // gt: ground truth alone.
    assert.deepStrictEqual(await added(ctl("gt", "repos", "--json")), ["Retriever"])
    // overview (the fleet's services) and db status (the database alone) add nothing: no other domain, no Live.
    assert.deepStrictEqual(await added(ctl("overview", "--json")), [])
    assert.deepStrictEqual(await added(ctl("db", "status", "--json")), [])
    assert.deepStrictEqual(await added(ctl("lease", "list", "--json")), [])

    // The control: a command still on every service (the janitor's reach to hosts) loads the every-domain graph,
    // so the spy watches the right module.
    assert.deepStrictEqual(await added(ctl("space", "cleaners", "list", "box", "--json")), ["Live"])
  })
})
