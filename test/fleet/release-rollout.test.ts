import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, assert, describe, it } from "vitest"
import * as Yaml from "yaml"
import { Ed25519 } from "../support/keel.js"
import { script, writeReleaseTree } from "../support/releases.js"
import { ctlBin, runCtl } from "../support/server.js"

// Issue 19, rollout (seed 002, "Release submission and delivery" rule 5) through the binary: `ctl release promote`
// moves release_control by generation compare-and-set; `ctl release rollout` (the release agent) declares the
// version on each target's binary, delivers the exact signed release where the host does not report it, and writes
// deployment.json only once every declared target reports the promoted version, artifact and manifest digests.
// The rollout is SIGKILLed after each declaration and delivery: run again, it converges, delivering nothing twice.

const children: Array<ChildProcess> = []
afterAll(() => {
  for (const child of children) child.kill("SIGKILL")
})

// The timeout only bounds a hang: a loaded machine is 5–10× slower.
const waitFor = async (what: string, check: () => boolean, timeoutMs = 300_000) => {
  const until = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

describe("ctl release promote|rollout", () => {
  it("converges every declared target, writes deployment.json last, and resumes after a kill", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-rollout-"))
    const key = Ed25519.generateKeyPair()
    const registry = path.join(dir, "registry.yml")
    const installed = (target: string) => path.join(dir, "hosts", target, "bin", "ctl")
    for (const target of ["a", "b"]) {
      fs.mkdirSync(path.dirname(installed(target)), { recursive: true })
      fs.writeFileSync(installed(target), script("ctl old"), { mode: 0o755 })
    }
    fs.writeFileSync(
      registry,
      Yaml.stringify({
        version: 1,
        settings: { release: { signing_key_item: "release-signing", signing_key_id: key.key_id } },
        targets: ["a", "b"].map((name) => ({
          name,
          os: "linux",
          channel: "local",
          binaries: [{ name: "ctl", path: installed(name), product: "keel" }]
        }))
      })
    )
    const env = {
      ...process.env,
      KEEL_DATA_DIR: path.join(dir, "data"),
      KEEL_REGISTRY: registry,
      KEEL_DEMO_DATA: "false",
      KEEL_LOG_LEVEL: "warning"
    }
    const ctl = async (args: ReadonlyArray<string>, input?: string) => {
      const result = await runCtl(args, env, input)
      // biome-ignore lint/suspicious/noExplicitAny: answers are checked field by field
      let json: any = null
      try {
        json = JSON.parse(result.stdout)
      } catch {}
      return { code: result.code, json, stderr: result.stderr, stdout: result.stdout }
    }
    const receipt = (target: string) => {
      try {
        return JSON.parse(fs.readFileSync(`${installed(target)}.release.json`, "utf8")) as { version: string }
      } catch {
        return null
      }
    }
    const declared = (target: string) =>
      (
        Yaml.parse(fs.readFileSync(registry, "utf8")) as {
          targets: Array<{ name: string; binaries: Array<{ version?: string }> }>
        }
      ).targets.find((t) => t.name === target)?.binaries[0]?.version
    const deployment = (version: string, generation: number) =>
      path.join(
        dir,
        "data",
        "objects",
        "releases",
        "keel",
        version,
        "deployments",
        String(generation),
        "deployment.json"
      )
    const runs = (tool: string) => execFileSync(installed(tool), ["--help"], { encoding: "utf8" }).trim()

    assert.strictEqual(
      (await ctl(["vault", "item", "put", "release-signing"], JSON.stringify({ private_key: key.private_key }))).code,
      0
    )
    const tree = path.join(dir, "tree")
    writeReleaseTree(path.join(dir, "staging"), tree, "1.0.0", script("ctl 1.0.0"), key)
    writeReleaseTree(path.join(dir, "staging"), tree, "1.1.0", script("ctl 1.1.0"), key)
    assert.strictEqual((await ctl(["release", "catalog", "sync", "--root", tree])).code, 0)

    // Nothing promoted yet, and nothing promotable outside the catalog.
    const unknown = await ctl(["release", "promote", "keel", "9.9.9", "--json"])
    assert.strictEqual(unknown.code, 1)
    assert.strictEqual(unknown.json.error.code, "ROLLOUT_REFUSED")

    // A release is never relabelled onto another channel, and a channel is a name.
    for (const channel of ["candidate", "Bad Channel!/../x"]) {
      const relabelled = await ctl(["release", "promote", "keel", "1.0.0", "--channel", channel, "--json"])
      assert.strictEqual(relabelled.code, 1, channel)
      assert.strictEqual(relabelled.json.error.code, "ROLLOUT_REFUSED", channel)
    }

    const promoted = await ctl(["release", "promote", "keel", "1.0.0", "--channel", "stable", "--json"])
    assert.strictEqual(promoted.code, 0, promoted.stderr)
    assert.deepInclude(promoted.json, {
      product: "keel",
      version: "1.0.0",
      channel: "stable",
      generation: 1,
      previous: null
    })

    const first = await ctl(["release", "rollout", "--json"])
    assert.strictEqual(first.code, 0, first.stdout + first.stderr)
    const product = first.json.products[0]
    assert.deepStrictEqual(
      product.targets.map((t: { target: string; declaration: string; delivery: string; ok: boolean }) => [
        t.target,
        t.declaration,
        t.delivery,
        t.ok
      ]),
      [
        ["a", "declared", "delivered", true],
        ["b", "declared", "delivered", true]
      ]
    )
    assert.strictEqual(product.deployment.outcome, "created")
    const record = JSON.parse(fs.readFileSync(deployment("1.0.0", 1), "utf8"))
    assert.strictEqual(record.manifest.sha256, product.manifest.sha256)
    assert.deepStrictEqual(
      record.targets.map((t: { target: string }) => t.target),
      ["a", "b"]
    )
    assert.strictEqual(runs("a"), "ctl 1.0.0")
    assert.strictEqual(declared("b"), "1.0.0")
    assert.strictEqual(receipt("a")?.version, "1.0.0")
    // The release's run record carries the delivery state.
    const runsDir = path.join(dir, "data", "objects", "release-runs")
    const runOf = (version: string) =>
      fs
        .readdirSync(runsDir)
        .map((id) => JSON.parse(fs.readFileSync(path.join(runsDir, id, "run.json"), "utf8")))
        .find((r) => r.inputs.version === version)
    assert.deepInclude(runOf("1.0.0").steps.delivery, {
      generation: 1,
      ok: true,
      deployment: "releases/keel/1.0.0/deployments/1/deployment.json"
    })

    // Converged already: nothing declared, nothing delivered, the record found.
    const again = await ctl(["release", "rollout", "--json"])
    assert.strictEqual(again.code, 0)
    assert.deepStrictEqual(
      again.json.products[0].targets.map(
        (t: { declaration: string; delivery: string }) => `${t.declaration}/${t.delivery}`
      ),
      ["already/current", "already/current"]
    )
    assert.strictEqual(again.json.products[0].deployment.outcome, "present")

    // Compare-and-set: a promoter that read generation 0 is refused.
    const stale = await ctl(["release", "promote", "keel", "1.1.0", "--expect-generation", "0", "--json"])
    assert.strictEqual(stale.code, 1)
    assert.strictEqual(stale.json.error.code, "PROMOTION_CONFLICT")
    assert.strictEqual((await ctl(["release", "promote", "keel", "1.1.0", "--expect-generation", "1"])).code, 0)

    // Killed after a's declaration, after a's delivery, after b's delivery: deployment.json is never early.
    const kills: Array<[string, () => boolean]> = [
      ["a declared", () => declared("a") === "1.1.0"],
      ["a delivered", () => receipt("a")?.version === "1.1.0"],
      ["b delivered", () => receipt("b")?.version === "1.1.0"]
    ]
    for (const [what, reached] of kills) {
      const child = spawn(process.execPath, [ctlBin, "release", "rollout", "--step-pause-ms", "3000"], {
        env,
        stdio: "ignore"
      })
      children.push(child)
      await waitFor(what, reached)
      child.kill("SIGKILL")
      await new Promise((resolve) => child.once("exit", resolve))
      assert.isFalse(fs.existsSync(deployment("1.1.0", 2)), `deployment.json after a kill at ${what}`)
    }
    const resumed = await ctl(["release", "rollout", "--json"])
    assert.strictEqual(resumed.code, 0, resumed.stdout)
    assert.deepStrictEqual(
      resumed.json.products[0].targets.map(
        (t: { declaration: string; delivery: string }) => `${t.declaration}/${t.delivery}`
      ),
      ["already/current", "already/current"],
      "every step was already done: nothing delivered twice"
    )
    assert.strictEqual(resumed.json.products[0].deployment.outcome, "created")
    assert.strictEqual(runs("b"), "ctl 1.1.0")

    // A rollback is a promotion of the older release: generation 3 converges back to 1.0.0.
    assert.strictEqual((await ctl(["release", "promote", "keel", "1.0.0"])).code, 0)
    const back = await ctl(["release", "rollout", "--json"])
    assert.strictEqual(back.code, 0, back.stdout)
    assert.strictEqual(back.json.products[0].deployment.key, "releases/keel/1.0.0/deployments/3/deployment.json")
    assert.strictEqual(runs("a"), "ctl 1.0.0")
    assert.strictEqual(runs("b"), "ctl 1.0.0")

    // A host whose binary was changed behind the agent's back no longer reports the release: redelivered.
    fs.writeFileSync(installed("b"), script("ctl tampered"), { mode: 0o755 })
    const repaired = await ctl(["release", "rollout", "--json"])
    assert.strictEqual(repaired.code, 0)
    assert.deepStrictEqual(
      repaired.json.products[0].targets.map((t: { delivery: string }) => t.delivery),
      ["current", "delivered"]
    )
    assert.strictEqual(runs("b"), "ctl 1.0.0")
  }, 900_000) // a bound on a hang: each ctl call takes 10–20 s on a loaded machine
})
