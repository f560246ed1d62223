import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { runCli } from "../support/cli.js"
import { runCtlOk } from "../support/server.js"

const root = fileURLToPath(new URL("../..", import.meta.url))
const env = () => ({
  KEEL_DATA_DIR: path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-host-")), "data"),
  KEEL_REGISTRY: path.join(root, "examples", "registry.yml")
})

describe("ctl host", () => {
  it.live("exec runs argv on the target and exits with its exit code", () =>
    Effect.gen(function* () {
      const settings = env()
      const marker = path.join(settings.KEEL_DATA_DIR, "..", "ran")
      const ok = yield* runCli(["host", "exec", "forge-1", "--", "touch", marker], settings)
      assert.strictEqual(ok.exitCode, 0, ok.stderr)
      assert.isTrue(fs.existsSync(marker))
      const failed = yield* runCli(["host", "exec", "forge-1", "--", "sh", "-c", "exit 7"], settings)
      assert.strictEqual(failed.exitCode, 7)
      const unknown = yield* runCli(["host", "exec", "nowhere", "--", "true"], settings)
      assert.strictEqual(unknown.exitCode, 1)
      assert.include(unknown.stderr, "not a target")
    })
  )

  it.live("beacon clear removes a stored beacon and says whether there was one", () =>
    Effect.gen(function* () {
      const settings = env()
      const none = yield* runCli(["host", "beacon", "clear", "forge-1", "--json"], settings)
      assert.strictEqual(none.exitCode, 0, none.stderr)
      assert.deepStrictEqual(JSON.parse(none.stdout), { host: "forge-1", cleared: false })
    })
  )

  it("exec --stdin forwards standard input to the command", async () => {
    const settings = env()
    const out = await runCtlOk(
      ["host", "exec", "forge-1", "--stdin", "--", "tr", "a-z", "A-Z"],
      { ...process.env, ...settings, KEEL_LOG_LEVEL: "error" },
      "piped text\n"
    )
    assert.strictEqual(out, "PIPED TEXT\n")
  }, 120_000) // a bound on a hang: ctl's start-up takes 10–20 s on a loaded machine

  it.live("health and inventory read the host now: disks per declared mount, declared units, tool version", () =>
    Effect.gen(function* () {
      const settings = env()
      const health = yield* runCli(["host", "health", "forge-1", "--json"], settings)
      assert.strictEqual(health.exitCode, 0, health.stderr)
      const beacon = JSON.parse(health.stdout)
      assert.deepStrictEqual(
        beacon.disks.map((d: { mount: string }) => d.mount),
        ["/", "/var/lib/keel"]
      )
      assert.isAbove(beacon.disks[0].total_bytes, 0)
      assert.deepStrictEqual(
        beacon.units.map((u: { name: string }) => u.name),
        ["keel-api", "keel-beacon", "keel-disk-cleanup"]
      )
      const inventory = JSON.parse((yield* runCli(["host", "inventory", "forge-1", "--json"], settings)).stdout)
      assert.match(inventory.kernel, /^Linux /)
      assert.deepStrictEqual(inventory.roles, ["control-plane", "queue", "builder"])
      assert.isString(inventory.tool_version)
    })
  )
})
