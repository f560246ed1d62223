import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ConfigProvider, Effect, type Exit } from "effect"
import { assert, describe, it, onTestFinished, vi } from "vitest"
import * as Yaml from "yaml"
// ctl's own entry, not the "keel" index: the index imports every module, which would hide what a command loads.
import { ctlMain, exitCodeOf } from "../../src/cli/Run.js"
import { runCtl } from "../support/server.js"

// Issue 43: a command builds only the services it uses. A service cannot be constructed without its module
// being imported, so a spy on the import of the retriever's and the market's modules shows whether a command
// could have built them: `ctl release key show` reads one vault item and must not.
const loaded = vi.hoisted(() => new Set<string>())
vi.mock("../../src/services/groundtruth/Retriever.js", async (original) => {
  loaded.add("Retriever")
  return await original()
})
vi.mock("../../src/services/market/TokenMarket.js", async (original) => {
  loaded.add("TokenMarket")
  return await original()
})

const inProcess = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.runPromise(
    ctlMain(["node", "ctl", ...args]).pipe(
      Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))),
      Effect.exit
    )
  ).then((exit) => exitCodeOf(exit as Exit.Exit<unknown, unknown>))

describe("ctl builds only what a command uses", () => {
  it("release key show loads neither the retriever nor the market; release key create (all services) does", async () => {
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

    assert.strictEqual(await inProcess(["release", "key", "show", "--item", "signing"], env), 0)
    assert.deepStrictEqual([...loaded], [], "release key show imported a domain service's module")

    // The spy sees what a command on every service loads: the control that it watches the right modules.
    assert.strictEqual(await inProcess(["release", "key", "create", "--item", "another"], env), 0)
    assert.sameMembers([...loaded], ["Retriever", "TokenMarket"])
  })
})
