import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, assert, describe, it } from "vitest"
import * as Yaml from "yaml"
import { queryDataDir } from "../support/data-dir-db.js"
import { Ed25519 } from "../support/keel.js"
import { script } from "../support/releases.js"
import { ctlBin, runCtl, startServer } from "../support/server.js"

// Issue 19, the repository tag adapter (seed 002, "Release submission and delivery" rule 7) through the binaries:
// a stable tag passes the exact-source version check and reserves every identity, then native publication (read
// back), native delivery to the required native targets, and only then Linux publication and delivery — four
// separate results; a refused required target stops it before Linux; a candidate tag publishes Linux only.

const children: Array<ChildProcess> = []
afterAll(() => {
  for (const child of children) child.kill("SIGKILL")
})

const git = (cwd: string, ...args: Array<string>) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.test", ...args], { cwd, encoding: "utf8" })

const recipe = (product: string, platform: string) => ({
  schema: "keel.recipe/v1",
  product,
  platform,
  build: ["sh", "build.sh"],
  artifact: "dist/release.tar.gz",
  binary: "tool/bin/tool"
})

/** Commits the declaration of `version` (native targets given) and tags the commit. */
const release = (source: string, version: string, tag: string, nativeTargets: ReadonlyArray<string>) => {
  fs.writeFileSync(
    path.join(source, "keel-release-declaration.json"),
    JSON.stringify({
      schema: "keel.release-declaration/v1",
      version,
      native: { recipe: "release/native.json", targets: nativeTargets },
      linux: { recipe: "release/linux.json", targets: ["forge"] }
    })
  )
  git(source, "add", "-A")
  git(source, "commit", "-q", "-m", version)
  git(source, "tag", tag)
}

describe("ctl release tag", () => {
  it("native publication and delivery before Linux, four results; refusals and candidates", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-release-tag-"))
    const key = Ed25519.generateKeyPair()
    const installed = (host: string) => path.join(dir, "hosts", host, "bin", "tool")
    for (const host of ["mac", "forge"]) {
      fs.mkdirSync(path.dirname(installed(host)), { recursive: true })
      fs.writeFileSync(installed(host), script("tool old"), { mode: 0o755 })
    }
    const registry = path.join(dir, "registry.yml")
    fs.writeFileSync(
      registry,
      Yaml.stringify({
        version: 1,
        settings: { release: { signing_key_item: "release-signing", signing_key_id: key.key_id } },
        actions: { "release-submit": ["builder"], "object-read": ["builder"] },
        targets: [
          {
            name: "mac",
            os: "linux",
            channel: "local",
            release_platform: "darwin-arm64",
            binaries: [{ name: "tool", path: installed("mac"), product: "tool-native" }]
          },
          {
            name: "forge",
            os: "linux",
            channel: "local",
            release_platform: "linux-x64",
            binaries: [{ name: "tool", path: installed("forge"), product: "tool" }]
          },
          { name: "bare", os: "linux", channel: "local" }
        ]
      })
    )
    const base = {
      ...(process.env as Record<string, string>),
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
      return { code: result.code, json, stdout: result.stdout, stderr: result.stderr }
    }
    let env: Record<string, string> = base
    assert.strictEqual(
      (await ctl(["vault", "item", "put", "release-signing"], JSON.stringify({ private_key: key.private_key }))).code,
      0
    )
    const grant = path.join(dir, "builder.grant")
    const granted = await ctl([
      "vault",
      "grant",
      "create",
      "--consumer",
      "builder",
      "--action",
      "release-submit",
      "--action",
      "object-read",
      "--out",
      grant
    ])
    assert.strictEqual(granted.code, 0, granted.stderr)
    const server = await startServer([ctlBin, "serve", "--port", "0"], { ...base, KEEL_LOG_LEVEL: "info" }, children)
    env = {
      ...base,
      KEEL_REMOTE_CTL: [
        "env",
        `KEEL_DATA_DIR=${path.join(dir, "builder-data")}`,
        `KEEL_CONTROL_PLANE_URL=http://127.0.0.1:${server.port}`,
        `KEEL_RELEASE_GRANT_FILE=${grant}`,
        "KEEL_LOG_LEVEL=warning",
        process.execPath,
        ctlBin
      ].join(" ")
    }
    children.push(spawn(process.execPath, [ctlBin, "machine", "work"], { env, stdio: "ignore" }))

    const source = path.join(dir, "src")
    fs.mkdirSync(path.join(source, "release"), { recursive: true })
    git(source, "init", "-q", "-b", "main")
    fs.writeFileSync(path.join(source, "release", "native.json"), JSON.stringify(recipe("tool-native", "darwin-arm64")))
    fs.writeFileSync(path.join(source, "release", "linux.json"), JSON.stringify(recipe("tool", "linux-x64")))
    fs.writeFileSync(
      path.join(source, "build.sh"),
      [
        "set -e",
        "mkdir -p out/tool/bin dist",
        'printf "#!/bin/sh\\necho $RELEASE_PRODUCT $RELEASE_VERSION\\n" > out/tool/bin/tool',
        "chmod 755 out/tool/bin/tool",
        "tar -C out -czf dist/release.tar.gz tool",
        ""
      ].join("\n")
    )
    const objects = path.join(dir, "data", "objects")
    const published = (product: string, version: string) =>
      fs.existsSync(path.join(objects, "releases", product, version, "release.json"))
    const runs = (host: string) => execFileSync(installed(host), ["--help"], { encoding: "utf8" }).trim()

    // A stable tag: all four, native first.
    release(source, "1.0.0", "v1.0.0", ["mac"])
    const stable = await ctl(["release", "tag", "v1.0.0", "--source", source, "--json"])
    assert.strictEqual(stable.code, 0, stable.stdout + stable.stderr)
    assert.deepInclude(stable.json, { tag: "v1.0.0", version: "1.0.0", kind: "stable", ok: true })
    for (const step of ["native_publication", "native_delivery", "linux_publication", "linux_delivery"])
      assert.strictEqual(stable.json[step].outcome, "succeeded", step)
    assert.strictEqual(stable.json.native_publication.coordinate.key, "releases/tool-native/1.0.0/release.json")
    assert.strictEqual(runs("mac"), "tool-native 1.0.0")
    assert.strictEqual(runs("forge"), "tool 1.0.0")
    // Linux publication started only after the native delivery: its first object is younger than the receipt.
    assert.isAtMost(
      fs.statSync(`${installed("mac")}.release.json`).mtimeMs,
      fs.statSync(path.join(objects, "releases", "tool", "1.0.0", "source-revision.json")).mtimeMs
    )

    // A required native target that cannot take the release: native delivery fails, Linux never starts.
    release(source, "1.1.0", "v1.1.0", ["bare"])
    const refusedTarget = await ctl(["release", "tag", "v1.1.0", "--source", source, "--json"])
    assert.strictEqual(refusedTarget.code, 1)
    assert.strictEqual(refusedTarget.json.native_publication.outcome, "succeeded")
    assert.strictEqual(refusedTarget.json.native_delivery.outcome, "failed")
    assert.include(refusedTarget.json.native_delivery.detail, "bare")
    assert.strictEqual(refusedTarget.json.linux_publication.outcome, "not_started")
    assert.isFalse(published("tool", "1.1.0"))
    assert.strictEqual(runs("forge"), "tool 1.0.0")

    // The exact-source version check: a tag whose source declares another version reserves nothing.
    git(source, "tag", "v1.2.0")
    const mismatch = await ctl(["release", "tag", "v1.2.0", "--source", source, "--json"])
    assert.strictEqual(mismatch.code, 1)
    assert.strictEqual(mismatch.json.error.code, "TAG_REFUSED")
    assert.include(mismatch.json.error.detail, "declares 1.1.0, not 1.2.0")
    const reservations = await queryDataDir<{ version: string }>(
      path.join(dir, "data"),
      "SELECT DISTINCT version FROM release_reservations ORDER BY version"
    )
    assert.deepStrictEqual(
      reservations.map((row) => row.version),
      ["1.0.0", "1.1.0"]
    )

    // A candidate tag: Linux publication only, on the candidate channel, marked as a candidate's run.
    release(source, "1.3.0-rc1", "v1.3.0-rc1", ["mac"])
    const candidate = await ctl(["release", "tag", "v1.3.0-rc1", "--source", source, "--json"])
    assert.strictEqual(candidate.code, 0, candidate.stdout + candidate.stderr)
    assert.strictEqual(candidate.json.kind, "candidate")
    assert.strictEqual(candidate.json.native_publication.outcome, "not_applicable")
    assert.strictEqual(candidate.json.linux_publication.outcome, "succeeded")
    assert.strictEqual(candidate.json.linux_delivery.outcome, "not_applicable")
    assert.isFalse(published("tool-native", "1.3.0-rc1"))
    const run = JSON.parse(
      fs.readFileSync(path.join(objects, "release-runs", candidate.json.linux_publication.run_id, "run.json"), "utf8")
    )
    assert.deepStrictEqual(run.steps.tag, { name: "v1.3.0-rc1", kind: "candidate" })
    assert.strictEqual(run.inputs.channel, "candidate")
    assert.strictEqual(runs("forge"), "tool 1.0.0", "a candidate is delivered nowhere")
  }, 900_000) // a bound on a hang: each ctl call takes 10–20 s on a loaded machine
})
