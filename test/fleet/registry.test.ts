import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Option } from "effect"
import {
  AppConfigTest,
  type CommandNode,
  commandTree,
  ctl,
  FleetRegistry,
  LAST_VALID_KEY,
  MemoryObjectStoreLayer,
  ObjectGateway,
  unknownCommand
} from "../support/keel.js"

const root = fileURLToPath(new URL("../..", import.meta.url))
const example = fs.readFileSync(path.join(root, "examples", "registry.yml"), "utf8")
const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), "keel-registry-"))

/** The registry service over an in-memory object store, reading the given environment. */
const RegistryTest = (env: Record<string, string>) =>
  FleetRegistry.Default.pipe(
    Layer.provideMerge(ObjectGateway.Default),
    Layer.provideMerge(MemoryObjectStoreLayer),
    Layer.provideMerge(AppConfigTest({ dataDir: tempDir() })),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))
  )

const invalid = (text: string) =>
  Effect.gen(function* () {
    const registry = yield* FleetRegistry
    const refused = yield* Effect.flip(registry.parse(text, "test.yml"))
    assert.strictEqual(refused._tag, "FleetRegistryInvalid")
    return refused._tag === "FleetRegistryInvalid" ? refused.problems : []
  }).pipe(Effect.provide(RegistryTest({})))

const withTarget = (target: string) => `version: 1\ntargets:\n${target}`

describe("the fleet registry", () => {
  it.effect("examples/registry.yml is a valid three-host fleet: two Linux, one macOS", () =>
    Effect.gen(function* () {
      const registry = yield* FleetRegistry
      const doc = yield* registry.parse(example, "examples/registry.yml")
      assert.deepStrictEqual(
        doc.targets.map((t) => [t.name, t.os]),
        [
          ["forge-1", "linux"],
          ["forge-2", "linux"],
          ["studio-mac", "darwin"]
        ]
      )
      const forge2 = doc.targets[1]!
      assert.deepStrictEqual(forge2.channel, {
        ssh: { host: "forge-2.internal", port: 22, user: "keel", identity_item: "fleet-ssh#private_key" }
      })
      assert.strictEqual(doc.targets[0]?.disk_cleanup?.mode, "enforce")
      assert.strictEqual(doc.settings.host_silence_seconds, 900)
      assert.deepStrictEqual(doc.actions["host-health-write"], [
        "beacon-forge-1",
        "beacon-forge-2",
        "beacon-studio-mac"
      ])
    }).pipe(Effect.provide(RegistryTest({})))
  )

  it.effect("validate reports schema problems and cross-checks at once, without optional-field noise", () =>
    Effect.gen(function* () {
      const problems = yield* invalid(
        withTarget(`  - name: a
    os: linux
    channel: local
    slots: "x"
    consumers: [nobody]
    disk_cleanup: {mode: enforce, check_interval_seconds: 60, low_free_gb: 5, target_free_gb: 10, max_items_per_pass: 1, max_bytes_per_pass: 1, max_scan_items: 10, cleaners: {build_caches: {root: /tmp, min_age_secs: 5}, backup_twins: {root: /r, primary_root: relative}}}
  - name: a
    os: linux
    channel: local
`)
      )
      assert.deepStrictEqual(
        problems.filter((p) => p.includes("Expected undefined")),
        []
      )
      assert.include(problems, 'targets.0.slots: Expected number, actual "x"')
      assert.isTrue(
        problems.some((p) => p.startsWith("targets.0.disk_cleanup.cleaners.build_caches.min_age_secs: is unexpected"))
      )
      assert.isTrue(problems.some((p) => p.startsWith("targets.0.disk_cleanup.cleaners.backup_twins.primary_root:")))
      assert.include(problems, "targets.1.name: duplicate target a")
      assert.include(problems, "targets.0.consumers.0: no target named nobody")
    })
  )

  it.effect("refusals name the offending field by its path", () =>
    Effect.gen(function* () {
      const problems = yield* invalid(
        withTarget(`  - name: web-1
    os: windows
    channel: { ssh: { host: h, user: u, identity_item: no-field } }
    surprise: true
    disk_cleanup:
      mode: enforce
      check_interval_seconds: 60
      low_free_gb: 50
      target_free_gb: 10
      max_items_per_pass: 10
      max_bytes_per_pass: 10
      max_scan_items: 300000
      cleaners: { not_a_cleaner: {} }
`)
      )
      const text = problems.join("\n")
      assert.include(text, "targets.0.os")
      assert.include(text, "targets.0.surprise: is unexpected")
      assert.include(text, "targets.0.channel")
      assert.include(text, "targets.0.disk_cleanup.max_scan_items: must be an integer from 1 to 200000")
      assert.include(text, "targets.0.disk_cleanup.cleaners.not_a_cleaner")
    })
  )

  it.effect("the schema's cross-checks: target_free_gb >= low_free_gb, unique names, known consumers", () =>
    Effect.gen(function* () {
      const watermarks = yield* invalid(
        withTarget(`  - name: web-1
    os: linux
    channel: local
    disk_cleanup: { mode: report, check_interval_seconds: 60, low_free_gb: 50, target_free_gb: 10, max_items_per_pass: 1, max_bytes_per_pass: 1, max_scan_items: 10 }
`)
      )
      assert.include(watermarks.join("\n"), "targets.0.disk_cleanup.target_free_gb: must be at least low_free_gb")
      const references = yield* invalid(
        withTarget(`  - { name: web-1, os: linux, channel: local, consumers: [ghost] }
  - name: web-1
    os: linux
    channel: local
    services:
      - { name: api, unit: /etc/systemd/system/api.service, endpoint: { url: "http://x/", consumers: [nobody] } }
      - { name: api, unit: /etc/systemd/system/api2.service }
`)
      )
      assert.deepStrictEqual(references, [
        "targets.1.name: duplicate target web-1",
        "targets.0.consumers.0: no target named ghost",
        "targets.1.services.0.endpoint.consumers.0: no target named nobody",
        "targets.1.services.1.name: duplicate service api"
      ])
      // A storage declaration: roots apart, writers among the target's services (issue 18).
      const storage = yield* invalid(
        withTarget(`  - name: web-1
    os: linux
    channel: local
    services: [{ name: api, unit: /etc/systemd/system/api.service }]
    storage:
      roots: { a: /srv/objects, b: /srv/objects/old }
      route_file: /srv/objects.route
      writers: [api, ghost]
      runtime: { kind: symlink, path: /srv/current }
`)
      )
      assert.include(storage.join("\n"), "targets.0.storage.roots.b: must be neither a nor inside it (nor contain it)")
      const writers = yield* invalid(
        withTarget(`  - name: web-1
    os: linux
    channel: local
    services: [{ name: api, unit: /etc/systemd/system/api.service }]
    storage:
      roots: { a: /srv/objects-a, b: /srv/objects-b }
      route_file: /srv/objects.route
      writers: [api, ghost]
      runtime: { kind: config_file, path: /etc/keel/objects-root }
`)
      )
      assert.deepStrictEqual(writers, ["targets.0.storage.writers.1: no service named ghost"])
      // Managed binaries (issue 19): unique names, absolute paths, versions without spaces.
      const binaries = yield* invalid(
        withTarget(`  - name: web-1
    os: linux
    channel: local
    release_platform: linux-x64
    binaries:
      - { name: ctl, path: /usr/local/bin/ctl, version: 1.4.2 }
      - { name: ctl, path: /opt/ctl }
`)
      )
      assert.deepStrictEqual(binaries, ["targets.0.binaries.1.name: duplicate binary ctl"])
      const badBinary = yield* invalid(
        withTarget(`  - name: web-1
    os: linux
    channel: local
    binaries: [{ name: ctl, path: bin/ctl, version: "1 beta" }]
`)
      )
      assert.include(badBinary.join("\n"), "targets.0.binaries.0.path")
      assert.include(badBinary.join("\n"), "targets.0.binaries.0.version")
      const yaml = yield* invalid("version: 1\ntargets: [")
      assert.match(yaml[0] ?? "", /^\(yaml\): /)
    })
  )

  it.effect("every load keeps the last valid snapshot; an unreadable source answers it only as cached history", () =>
    Effect.gen(function* () {
      const registry = yield* FleetRegistry
      const objects = yield* ObjectGateway
      const current = yield* registry.read()
      assert.strictEqual(current.freshness, "current")
      assert.strictEqual(current.source.kind, "file")
      const stored = yield* objects.getJson(LAST_VALID_KEY)
      assert.isTrue(Option.isSome(stored))
      fs.rmSync(registryFile)
      const refused = yield* Effect.flip(registry.read())
      assert.strictEqual(refused._tag, "FleetRegistryUnavailable")
      const cached = yield* registry.read({ allowCached: true })
      assert.strictEqual(cached.freshness, "cached")
      assert.match(cached.cachedBecause ?? "", /ENOENT/)
      assert.strictEqual(cached.digest, current.digest)
      assert.strictEqual(cached.loadedAt, current.loadedAt)
      assert.deepStrictEqual(cached.registry, current.registry)
      // An invalid source is refused, never papered over with the snapshot.
      fs.writeFileSync(registryFile, "version: 2\ntargets: []\n")
      const broken = yield* Effect.flip(registry.read({ allowCached: true }))
      assert.strictEqual(broken._tag, "FleetRegistryInvalid")
    }).pipe(Effect.provide(RegistryTest({ KEEL_REGISTRY: registryFile })))
  )

  it.effect("a snapshot of another source is never answered, not even as cached history", () =>
    Effect.gen(function* () {
      const registry = yield* FleetRegistry
      const objects = yield* ObjectGateway
      fs.writeFileSync(registryFile, example)
      const current = yield* registry.read()
      // The snapshot a differently configured process (or a mistyped KEEL_REGISTRY) left behind.
      const stored = yield* objects.getJson(LAST_VALID_KEY)
      const other = {
        ...(Option.getOrThrow(stored) as object),
        source: { kind: "file", location: "/elsewhere/registry.yml" }
      }
      yield* objects.putJson(LAST_VALID_KEY, other)
      fs.rmSync(registryFile)
      const refused = yield* Effect.flip(registry.read({ allowCached: true }))
      assert.strictEqual(refused._tag, "FleetRegistryUnavailable")
      // Its own snapshot is still history it may answer.
      yield* objects.putJson(LAST_VALID_KEY, { ...other, source: current.source })
      assert.strictEqual((yield* registry.read({ allowCached: true })).freshness, "cached")
    }).pipe(Effect.provide(RegistryTest({ KEEL_REGISTRY: registryFile })))
  )

  it.effect("a git source is read at the configured ref, and the commit is recorded", () =>
    Effect.gen(function* () {
      const registry = yield* FleetRegistry
      const snapshot = yield* registry.read()
      assert.strictEqual(snapshot.source.kind, "git")
      assert.strictEqual(snapshot.source.commit, gitRepo.first)
      assert.strictEqual(snapshot.source.path, "fleet/registry.yml")
      assert.strictEqual(snapshot.registry.release_control.generation, 12)
    }).pipe(
      Effect.provide(
        RegistryTest({
          KEEL_REGISTRY: `file://${gitRepo.dir}`,
          KEEL_REGISTRY_REF: "v1",
          KEEL_REGISTRY_PATH: "fleet/registry.yml"
        })
      )
    )
  )

  it.effect("the bundled registry is a third source, answered as bundled", () =>
    Effect.gen(function* () {
      const snapshot = yield* (yield* FleetRegistry).bundled()
      assert.strictEqual(snapshot.freshness, "bundled")
      assert.strictEqual(snapshot.registry.targets.length, 3)
      const unconfigured = yield* Effect.flip((yield* FleetRegistry).read())
      assert.strictEqual(unconfigured._tag, "FleetRegistryUnavailable")
    }).pipe(Effect.provide(RegistryTest({})))
  )
})

const registryFile = path.join(tempDir(), "registry.yml")
fs.writeFileSync(registryFile, example)

/** A real repository whose tag v1 holds the example and whose HEAD has moved on (generation 13). */
const gitRepo = (() => {
  const dir = tempDir()
  const git = (...args: Array<string>) =>
    execFileSync("git", ["-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", ...args], { encoding: "utf8" }).trim()
  git("init", "-q", "-b", "main")
  fs.mkdirSync(path.join(dir, "fleet"))
  fs.writeFileSync(path.join(dir, "fleet", "registry.yml"), example)
  git("add", ".")
  git("commit", "-q", "-m", "fleet")
  git("tag", "v1")
  const first = git("rev-parse", "HEAD")
  fs.writeFileSync(path.join(dir, "fleet", "registry.yml"), example.replace("generation: 12", "generation: 13"))
  git("commit", "-q", "-am", "next generation")
  return { dir, first }
})()

describe("the example registry", () => {
  it.effect("every ctl service it declares runs a command that exists, down to a leaf", () =>
    Effect.gen(function* () {
      const doc = yield* (yield* FleetRegistry).parse(example, "examples/registry.yml")
      const services = doc.targets.flatMap((t) => t.services).filter((s) => s.program?.endsWith("/ctl"))
      assert.isAbove(services.length, 0)
      const tree = commandTree(ctl)
      for (const service of services) {
        assert.isUndefined(unknownCommand(service.args), `${service.name}: ${service.args.join(" ")}`)
        let node: CommandNode | undefined = tree
        for (const arg of service.args) {
          if (arg.startsWith("-") || node?.children === undefined) break
          node = node.children.get(arg)
        }
        assert.isUndefined(node?.children, `${service.name} names a command, not a group`)
      }
      // The beacon is marked, so reconciliation reasserts its timer instead of ensuring a service.
      assert.deepStrictEqual(
        doc.targets.flatMap((t) => t.services.filter((s) => s.role === "beacon").map((s) => `${t.name}/${s.name}`)),
        ["forge-1/keel-beacon"]
      )
    }).pipe(Effect.provide(RegistryTest({})))
  )
})
