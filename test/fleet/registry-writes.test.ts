import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Option } from "effect"
import { runCli } from "../support/cli.js"
import {
  AppConfigTest,
  FleetRegistry,
  LAST_VALID_KEY,
  MemoryObjectStoreLayer,
  mergePatch,
  ObjectGateway,
  RegistryWriter,
  sha256Hex
} from "../support/keel.js"

// Issue 15, registry writes: compare-and-set on the registry's digest, validated first, the file replaced
// atomically, the git source committed and pushed as a fast-forward, last-valid refreshed, an audit object.

const root = fileURLToPath(new URL("../..", import.meta.url))
const example = fs.readFileSync(path.join(root, "examples", "registry.yml"), "utf8")
const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), "keel-registry-writes-"))

const WriterTest = (env: Record<string, string>) =>
  RegistryWriter.Default.pipe(
    Layer.provideMerge(FleetRegistry.Default),
    Layer.provideMerge(ObjectGateway.Default),
    Layer.provideMerge(MemoryObjectStoreLayer),
    Layer.provideMerge(AppConfigTest({ dataDir: tempDir() })),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))
  )

const next = (text: string) => text.replace("generation: 12", "generation: 13")

describe("registry writes: the file source", () => {
  const file = path.join(tempDir(), "registry.yml")
  fs.writeFileSync(file, example, { mode: 0o640 })

  it.effect("compare-and-set: of concurrent writers shown the same digest exactly one wins", () =>
    Effect.gen(function* () {
      const writer = yield* RegistryWriter
      const before = sha256Hex(example)
      const outcomes = yield* Effect.all(
        Array.from({ length: 6 }, (_, i) =>
          Effect.either(writer.set(before, example.replace("generation: 12", `generation: ${20 + i}`), `writer ${i}`))
        ),
        { concurrency: "unbounded" }
      )
      const winners = outcomes.filter((o) => o._tag === "Right")
      assert.lengthOf(winners, 1)
      for (const loser of outcomes.filter((o) => o._tag === "Left"))
        assert.strictEqual(loser.left._tag, "RegistryConflict")
      const now = fs.readFileSync(file, "utf8")
      assert.strictEqual(sha256Hex(now), winners[0]!.right.digest_after)
      assert.strictEqual(fs.statSync(file).mode & 0o777, 0o640, "the file keeps its mode")
      // The new registry is read back, kept as the last valid snapshot, and audited.
      const snapshot = yield* (yield* FleetRegistry).read()
      assert.strictEqual(snapshot.digest, sha256Hex(now))
      const stored = yield* (yield* ObjectGateway).getJson(LAST_VALID_KEY)
      assert.strictEqual((Option.getOrThrow(stored) as { digest: string }).digest, sha256Hex(now))
      const audit = yield* (yield* ObjectGateway).getJson(winners[0]!.right.audit_key)
      assert.include(JSON.stringify(Option.getOrThrow(audit)), "writer ")
      // No lock or temporary file is left beside the registry.
      assert.deepStrictEqual(fs.readdirSync(path.dirname(file)), ["registry.yml"])
    }).pipe(Effect.provide(WriterTest({ KEEL_REGISTRY: file })))
  )

  it.effect("a write that fails validation changes nothing; a stale digest is a conflict naming the current one", () =>
    Effect.gen(function* () {
      const writer = yield* RegistryWriter
      const current = fs.readFileSync(file, "utf8")
      const invalid = yield* Effect.flip(writer.set(sha256Hex(current), "version: 1\ntargets: []\n", "break it"))
      assert.strictEqual(invalid._tag, "FleetRegistryInvalid")
      // What is invalid is the text as changed, not the registry file that is there now.
      if (invalid._tag === "FleetRegistryInvalid") {
        assert.strictEqual(invalid.source, file)
        assert.match(invalid.detail, /^the change to /)
      }
      assert.strictEqual(fs.readFileSync(file, "utf8"), current)
      const stale = yield* Effect.flip(writer.set(sha256Hex(example), next(current), "stale"))
      assert.strictEqual(stale._tag, "RegistryConflict")
      if (stale._tag === "RegistryConflict") assert.strictEqual(stale.current, sha256Hex(current))
      assert.strictEqual(fs.readFileSync(file, "utf8"), current)
    }).pipe(Effect.provide(WriterTest({ KEEL_REGISTRY: file })))
  )

  it.effect("apply: a merge patch on the current document", () =>
    Effect.gen(function* () {
      const writer = yield* RegistryWriter
      const current = fs.readFileSync(file, "utf8")
      const written = yield* writer.apply(
        sha256Hex(current),
        "actions:\n  fleet-read: [ops, dashboard, auditor]\nrelease_control:\n  channel: beta\n",
        "add the auditor"
      )
      const doc = (yield* (yield* FleetRegistry).read()).registry
      assert.deepStrictEqual(doc.actions["fleet-read"], ["ops", "dashboard", "auditor"])
      assert.strictEqual(doc.release_control.channel, "beta")
      assert.strictEqual(doc.targets.length, 3)
      assert.strictEqual(written.digest_after, sha256Hex(fs.readFileSync(file, "utf8")))
      assert.deepStrictEqual(mergePatch({ a: 1, b: { c: 2, d: 3 } }, { b: { c: null, e: 4 }, f: [1] }), {
        a: 1,
        b: { d: 3, e: 4 },
        f: [1]
      })
    }).pipe(Effect.provide(WriterTest({ KEEL_REGISTRY: file })))
  )
})

/** A bare "remote" with the example at fleet/registry.yml on main, and a way to push to it from elsewhere. */
const remote = () => {
  const bare = path.join(tempDir(), "fleet.git")
  execFileSync("git", ["init", "-q", "--bare", "-b", "main", bare])
  const work = tempDir()
  const git = (...args: Array<string>) =>
    execFileSync("git", ["-C", work, "-c", "user.name=t", "-c", "user.email=t@t", ...args], { encoding: "utf8" }).trim()
  git("init", "-q", "-b", "main")
  fs.mkdirSync(path.join(work, "fleet"))
  fs.writeFileSync(path.join(work, "fleet", "registry.yml"), example)
  git("add", ".")
  git("commit", "-q", "-m", "fleet")
  git("remote", "add", "origin", bare)
  git("push", "-q", "origin", "main")
  return { bare, work, git }
}

describe("registry writes: the git source", () => {
  it.effect("one commit on the branch, visible in the repository; a remote that moved is a conflict", () =>
    Effect.gen(function* () {
      const repo = remote()
      const env = { KEEL_REGISTRY: `file://${repo.bare}`, KEEL_REGISTRY_PATH: "fleet/registry.yml" }
      const written = yield* Effect.gen(function* () {
        const writer = yield* RegistryWriter
        return yield* writer.set(sha256Hex(example), next(example), "generation 13")
      }).pipe(Effect.provide(WriterTest(env)))
      const log = execFileSync("git", ["-C", repo.bare, "log", "--format=%H %s", "main"], { encoding: "utf8" })
      assert.match(log.split("\n")[0]!, new RegExp(`^${written.source.commit} registry: generation 13$`))
      const shown = execFileSync("git", ["-C", repo.bare, "show", "main:fleet/registry.yml"], { encoding: "utf8" })
      assert.strictEqual(shown, next(example))

      // Someone else pushes meanwhile; a write against what we read is refused and changes nothing.
      repo.git("pull", "-q", "origin", "main")
      fs.writeFileSync(
        path.join(repo.work, "fleet", "registry.yml"),
        next(example).replace("generation: 13", "generation: 14")
      )
      repo.git("commit", "-q", "-am", "someone else")
      repo.git("push", "-q", "origin", "main")
      const head = execFileSync("git", ["-C", repo.bare, "rev-parse", "main"], { encoding: "utf8" }).trim()
      const refused = yield* Effect.gen(function* () {
        const writer = yield* RegistryWriter
        return yield* Effect.flip(writer.set(sha256Hex(next(example)), example, "roll back"))
      }).pipe(Effect.provide(WriterTest(env)))
      assert.strictEqual(refused._tag, "RegistryConflict")
      assert.strictEqual(execFileSync("git", ["-C", repo.bare, "rev-parse", "main"], { encoding: "utf8" }).trim(), head)
      // An invalid document is refused before anything is committed.
      const invalid = yield* Effect.gen(function* () {
        const writer = yield* RegistryWriter
        return yield* Effect.flip(
          writer.set(
            sha256Hex(fs.readFileSync(path.join(repo.work, "fleet", "registry.yml"), "utf8")),
            "version: 2\n",
            "bad"
          )
        )
      }).pipe(Effect.provide(WriterTest(env)))
      assert.strictEqual(invalid._tag, "FleetRegistryInvalid")
      assert.strictEqual(execFileSync("git", ["-C", repo.bare, "rev-parse", "main"], { encoding: "utf8" }).trim(), head)
    })
  )
})

describe("ctl registry set|apply", () => {
  it.effect("--expect is required; a wrong one exits 1 naming the current digest; a right one writes", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const file = path.join(dir, "registry.yml")
      fs.writeFileSync(file, example)
      const proposal = path.join(dir, "proposal.yml")
      fs.writeFileSync(proposal, next(example))
      const env = { KEEL_REGISTRY: file, KEEL_DATA_DIR: path.join(dir, "data") }
      assert.strictEqual((yield* runCli(["registry", "set", proposal], env)).exitCode, 2)
      const wrong = yield* runCli(["registry", "set", proposal, "--expect", sha256Hex("other"), "--json"], env)
      assert.strictEqual(wrong.exitCode, 1)
      assert.strictEqual(JSON.parse(wrong.stdout).error.code, "REGISTRY_CONFLICT")
      assert.strictEqual(JSON.parse(wrong.stdout).error.current, sha256Hex(example))
      const right = yield* runCli(["registry", "set", proposal, "--expect", sha256Hex(example), "--json"], env)
      assert.strictEqual(right.exitCode, 0, right.stderr)
      assert.strictEqual(JSON.parse(right.stdout).digest_after, sha256Hex(next(example)))
      assert.strictEqual(fs.readFileSync(file, "utf8"), next(example))
      const patch = path.join(dir, "patch.json")
      fs.writeFileSync(patch, JSON.stringify({ settings: { max_actions_per_tick: 9 } }))
      const applied = yield* runCli(["registry", "apply", patch, "--expect", sha256Hex(next(example))], env)
      assert.strictEqual(applied.exitCode, 0, applied.stderr)
      assert.match(applied.stdout, /^registry written: /)
      assert.include(fs.readFileSync(file, "utf8"), "max_actions_per_tick: 9")
    })
  )
})
