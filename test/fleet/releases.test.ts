import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Option } from "effect"
import * as Yaml from "yaml"
import {
  CatalogMaintenance,
  canonicalBytes,
  canonicalJson,
  directoryReader,
  Ed25519,
  ObjectStore,
  objectStoreReader,
  ReleaseAuthority,
  ReleaseCatalog,
  ReleasePublisher,
  releaseKey,
  ServicesTest,
  Vault,
  verifyRelease
} from "../support/keel.js"

// Issue 19, the release authority and canonical publication: signing inside the vault, the signed manifest as the
// commit marker, create-only publication in order, verification as every reader does it, and the catalog with its
// reservations — a flipped byte, an untrusted key, a manifest for another version are each refused.

const temp = (prefix: string) => fs.mkdtempSync(path.join(os.tmpdir(), prefix))

const key = Ed25519.generateKeyPair()

/** A registry naming `key` as the release authority (vault item release-signing). */
const withRegistry = () => {
  const dir = temp("keel-releases-")
  const registry = path.join(dir, "registry.yml")
  fs.writeFileSync(
    registry,
    Yaml.stringify({
      version: 1,
      settings: { release: { signing_key_item: "release-signing", signing_key_id: key.key_id } },
      targets: [{ name: "box", os: "linux", channel: "local" }]
    })
  )
  return ServicesTest({ dataDir: path.join(dir, "data") }).pipe(
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["KEEL_REGISTRY", registry]]))))
  )
}

const storeKey = Effect.flatMap(Vault, (vault) => vault.putItem("release-signing", { private_key: key.private_key }))

/** An archive on disk, and a new release of it. */
const newRelease = (version: string, revision = "a".repeat(40)) => {
  const dir = temp("keel-artifact-")
  const artifactFile = path.join(dir, "release.tar.gz")
  fs.writeFileSync(artifactFile, crypto.randomBytes(64 * 1024))
  return {
    product: "keel",
    version,
    channel: "stable",
    createdAt: "2026-11-24T00:00:00.000Z",
    source: { revision, tree: "b".repeat(40), sha256: "c".repeat(64), size: 1234 },
    platform: "linux-x64",
    binary: "bin/ctl",
    artifactFile,
    qualification: { checks: ["unit", "e2e"], passed: true }
  }
}

/** Writes a release's published objects into `<root>/<product>/<version>/`, as an existing tree to import. */
const exportTree = (root: string, product: string, version: string) =>
  Effect.gen(function* () {
    const store = yield* ObjectStore
    const dir = path.join(root, product, version)
    fs.mkdirSync(dir, { recursive: true })
    for (const file of [
      "source-revision.json",
      "release.tar.gz",
      "qualification.json",
      "release.sig",
      "release.json"
    ]) {
      const found = yield* store.get(releaseKey(product, version, file))
      if (Option.isSome(found)) fs.writeFileSync(path.join(dir, file), found.value.bytes)
    }
    return dir
  })

describe("canonical JSON", () => {
  it("sorts keys by code unit, drops undefined members, and refuses what has no single form", () => {
    assert.strictEqual(
      canonicalJson({ b: 1, a: [true, null, "é\n"], c: { z: undefined, y: "x" } }),
      '{"a":[true,null,"é\\n"],"b":1,"c":{"y":"x"}}'
    )
    assert.strictEqual(canonicalJson({ "\u00e9": 1, z: 2, A: 3 }), '{"A":3,"z":2,"é":1}')
    assert.throws(() => canonicalJson({ ratio: 0.5 }), /ratio: 0.5 is not a safe integer/)
    assert.throws(() => canonicalJson({ at: new Date(0) }), /at: not a plain object/)
  })
})

describe("signing inside the vault", () => {
  it.effect("signs with the item's Ed25519 key (deterministic), names it by key id, and refuses other keys", () =>
    Effect.gen(function* () {
      const vault = yield* Vault
      yield* storeKey
      const bytes = new TextEncoder().encode("release.json bytes")
      const first = yield* vault.sign("release-signing", "private_key", bytes)
      const again = yield* vault.sign("release-signing", "private_key", bytes)
      assert.strictEqual(first.key_id, key.key_id)
      assert.match(first.key_id, /^sha256:[0-9a-f]{64}$/)
      assert.deepStrictEqual(Buffer.from(first.signature), Buffer.from(again.signature))
      assert.isTrue(Ed25519.verify(Ed25519.publicKeyFrom(key.public_key), bytes, first.signature))
      assert.deepStrictEqual(yield* vault.publicKey("release-signing", "private_key"), {
        key_id: key.key_id,
        public_key: key.public_key
      })
      // An EC key, a public key and junk are no signing keys.
      const ec = crypto.generateKeyPairSync("ec", { namedCurve: "prime256v1" })
      yield* vault.putItem("wrong", {
        ec: ec.privateKey.export({ format: "der", type: "pkcs8" }).toString("base64"),
        spki: key.public_key,
        junk: "not base64!"
      })
      for (const field of ["ec", "spki", "junk"]) {
        const refused = yield* Effect.flip(vault.sign("wrong", field, bytes))
        assert.strictEqual(refused._tag, "VaultKeyRefused", field)
      }
      assert.strictEqual((yield* Effect.flip(vault.sign("absent", "private_key", bytes)))._tag, "VaultItemNotFound")
    }).pipe(Effect.provide(withRegistry()))
  )

  it.effect("the authority refuses a vault key that is not the registry's trusted key", () =>
    Effect.gen(function* () {
      const other = Ed25519.generateKeyPair()
      yield* (yield* Vault).putItem("release-signing", { private_key: other.private_key })
      const refused = yield* Effect.flip((yield* ReleaseAuthority).trusted)
      assert.strictEqual(refused.code, "RELEASE_AUTHORITY_UNAVAILABLE")
      assert.include(refused.detail, `not the trusted ${key.key_id}`)
    }).pipe(Effect.provide(withRegistry()))
  )
})

describe("canonical publication", () => {
  it.effect("publishes in order, create-only; release.json verifies as the commit marker; repeating is a no-op", () =>
    Effect.gen(function* () {
      yield* storeKey
      const publisher = yield* ReleasePublisher
      const store = yield* ObjectStore
      const release = newRelease("1.0.0")
      const first = yield* publisher.publishRelease(release)
      assert.deepStrictEqual(
        first.steps.map((s) => `${s.file}:${s.outcome}`),
        [
          "source-revision.json:created",
          "release.tar.gz:created",
          "qualification.json:created",
          "release.sig:created",
          "release.json:created"
        ]
      )
      const again = yield* publisher.publishRelease(release)
      assert.isTrue(again.steps.every((s) => s.outcome === "present"))
      assert.strictEqual(again.manifest_sha256, first.manifest_sha256)
      const trusted = yield* (yield* ReleaseAuthority).trusted
      const verified = yield* verifyRelease(objectStoreReader(store, "keel", "1.0.0"), release, trusted)
      assert.deepStrictEqual(verified.problems, [])
      assert.strictEqual(verified.manifest?.artifact.size, 64 * 1024)
      assert.strictEqual(verified.manifest_sha256, first.manifest_sha256)
      // The same version from another archive: the published objects never change.
      const conflict = (yield* Effect.flip(publisher.publishRelease({ ...newRelease("1.0.0") }))) as unknown as {
        _tag: string
        key: string
      }
      assert.strictEqual(conflict._tag, "PublicationConflict")
      assert.include(conflict.key, "release.tar.gz")
    }).pipe(Effect.provide(withRegistry()))
  )

  it.effect("a publication stopped at any step never leaves release.json before the others, and resumes", () =>
    Effect.gen(function* () {
      yield* storeKey
      const store = yield* ObjectStore
      const publisher = yield* ReleasePublisher
      const files = ["source-revision.json", "release.tar.gz", "qualification.json", "release.sig", "release.json"]
      for (let stop = 0; stop < files.length; stop++) {
        const version = `2.0.${stop}`
        const release = newRelease(version)
        // The store fails the write of the stop-th object: the publication ends there.
        const failing = {
          ...store,
          write: ((key: string, body: never, condition: never) =>
            key.endsWith(`/${files[stop]}`)
              ? Effect.die(new Error("killed"))
              : store.write(key, body, condition)) as typeof store.write
        }
        const interrupted = yield* Effect.flatMap(ReleasePublisher, (p) => Effect.exit(p.publishRelease(release))).pipe(
          Effect.provide(ReleasePublisher.Default),
          Effect.provideService(ObjectStore, failing)
        )
        assert.isTrue(interrupted._tag === "Failure")
        for (const [i, file] of files.entries()) {
          const exists = Option.isSome(yield* store.head(releaseKey("keel", version, file)))
          assert.strictEqual(exists, i < stop, `${file} after a stop at ${files[stop]}`)
        }
        const resumed = yield* publisher.publishRelease(release)
        assert.deepStrictEqual(
          resumed.steps.map((s) => s.outcome),
          files.map((_, i) => (i < stop ? "present" : "created"))
        )
      }
    }).pipe(Effect.provide(withRegistry()))
  )
})

describe("the catalog", () => {
  it.effect("sync imports verified trees, refuses tampered ones, and audit re-verifies the object store", () =>
    Effect.gen(function* () {
      yield* storeKey
      const publisher = yield* ReleasePublisher
      const store = yield* ObjectStore
      const maintenance = yield* CatalogMaintenance
      const root = temp("keel-release-tree-")
      // Three good releases published elsewhere, exported as a tree.
      for (const version of ["3.0.0", "3.0.1", "3.0.2"]) yield* publisher.publishRelease(newRelease(version))
      for (const version of ["3.0.0", "3.0.1", "3.0.2"]) yield* exportTree(root, "keel", version)
      // Tampered releases: a flipped byte in 4.0.0's artifact, 4.0.1 signed by another key, 3.0.2's manifest as
      // 3.0.9's. 4.0.0 and 4.0.1 were published by the authority and exported, then removed from this store.
      for (const version of ["4.0.0", "4.0.1"]) {
        yield* publisher.publishRelease(newRelease(version))
        yield* exportTree(root, "keel", version)
        for (const file of [
          "source-revision.json",
          "release.tar.gz",
          "qualification.json",
          "release.sig",
          "release.json"
        ])
          yield* store.delete(releaseKey("keel", version, file))
      }
      const artifact = path.join(root, "keel", "4.0.0", "release.tar.gz")
      const bytes = fs.readFileSync(artifact)
      bytes[100] = (bytes[100] ?? 0) ^ 0xff
      fs.writeFileSync(artifact, bytes)
      const rogue = Ed25519.generateKeyPair()
      const untrusted = path.join(root, "keel", "4.0.1")
      fs.writeFileSync(
        path.join(untrusted, "release.sig"),
        canonicalBytes({
          alg: "ed25519",
          key_id: rogue.key_id,
          signature: Buffer.from(
            Ed25519.sign(
              Ed25519.privateKeyFrom(rogue.private_key),
              fs.readFileSync(path.join(untrusted, "release.json"))
            )
          ).toString("base64")
        })
      )
      fs.cpSync(path.join(root, "keel", "3.0.2"), path.join(root, "keel", "3.0.9"), { recursive: true })

      const report = yield* maintenance.sync(root)
      const outcome = (version: string) => report.releases.find((r) => r.version === version)
      assert.isFalse(report.ok)
      // Published already (identical objects), recorded in the catalog now.
      assert.strictEqual(outcome("3.0.0")?.outcome, "imported")
      assert.isTrue(outcome("3.0.0")?.steps.every((s) => s.outcome === "present"))
      assert.deepStrictEqual(
        outcome("4.0.0")?.problems.map((p) => p.code),
        ["artifact_mismatch"]
      )
      assert.deepStrictEqual(
        outcome("4.0.1")?.problems.map((p) => p.code),
        ["untrusted_key"]
      )
      assert.include(outcome("3.0.9")?.problems.map((p) => p.code) ?? [], "manifest_mismatch")
      for (const version of ["4.0.0", "4.0.1", "3.0.9"]) {
        assert.strictEqual(outcome(version)?.outcome, "refused")
        assert.isTrue(Option.isNone(yield* store.head(releaseKey("keel", version, "release.json"))), version)
      }
      // The good ones are in the catalog with their reservations; audit verifies them.
      assert.deepStrictEqual(
        (yield* (yield* ReleaseCatalog).entries).map((e) => e.version),
        ["3.0.0", "3.0.1", "3.0.2"]
      )
      assert.isTrue((yield* maintenance.audit).ok)
      // Syncing again changes nothing.
      const again = yield* maintenance.sync(root)
      assert.deepStrictEqual(
        again.releases.filter((r) => r.outcome !== "refused").map((r) => `${r.version}:${r.outcome}`),
        ["3.0.0:present", "3.0.1:present", "3.0.2:present"]
      )

      // A byte flipped in the object store after the fact: audit finds it.
      const stored = yield* store.get(releaseKey("keel", "3.0.1", "release.tar.gz"))
      const corrupted = Option.getOrThrow(stored).bytes.slice()
      corrupted[7] = (corrupted[7] ?? 0) ^ 1
      yield* store.put(releaseKey("keel", "3.0.1", "release.tar.gz"), corrupted)
      const audit = yield* maintenance.audit
      assert.isFalse(audit.ok)
      assert.deepStrictEqual(
        audit.releases.filter((r) => !r.ok).map((r) => [r.version, r.problems.map((p) => p.code)]),
        [["3.0.1", ["artifact_mismatch"]]]
      )
    }).pipe(Effect.provide(withRegistry()))
  )

  it.effect("a used version is never reassigned to another source revision", () =>
    Effect.gen(function* () {
      yield* storeKey
      const catalog = yield* ReleaseCatalog
      yield* catalog.reserve("keel", "5.0.0", ["linux-x64"], "a".repeat(40))
      yield* catalog.reserve("keel", "5.0.0", ["linux-x64"], "a".repeat(40))
      const refused = yield* Effect.flip(catalog.reserve("keel", "5.0.0", ["linux-arm64"], "d".repeat(40)))
      assert.strictEqual(refused.code, "VERSION_RESERVED")
      assert.strictEqual(refused.platform, "*")
      // The refused attempt reserved nothing of its own.
      assert.deepStrictEqual(
        (yield* catalog.reservations).map((r) => `${r.platform}:${r.revision.slice(0, 1)}`),
        ["*:a", "linux-x64:a"]
      )
      // A tree of a version reserved for another revision is refused by sync.
      const publisher = yield* ReleasePublisher
      const root = temp("keel-release-tree-")
      yield* publisher.publishRelease(newRelease("6.0.0", "e".repeat(40)))
      yield* exportTree(root, "keel", "6.0.0")
      yield* catalog.reserve("keel", "6.0.0", [], "f".repeat(40))
      const report = yield* (yield* CatalogMaintenance).sync(root)
      assert.deepStrictEqual(
        report.releases[0]?.problems.map((p) => p.code),
        ["version_reserved"]
      )
    }).pipe(Effect.provide(withRegistry()))
  )

  it.effect("directory and object-store readers agree on a good release", () =>
    Effect.gen(function* () {
      yield* storeKey
      const release = newRelease("7.0.0")
      yield* (yield* ReleasePublisher).publishRelease(release)
      const dir = yield* exportTree(temp("keel-release-tree-"), "keel", "7.0.0")
      const trusted = yield* (yield* ReleaseAuthority).trusted
      const fromDir = yield* verifyRelease(directoryReader(dir), release, trusted)
      const fromStore = yield* verifyRelease(objectStoreReader(yield* ObjectStore, "keel", "7.0.0"), release, trusted)
      assert.isTrue(fromDir.ok && fromStore.ok)
      assert.strictEqual(fromDir.manifest_sha256, fromStore.manifest_sha256)
    }).pipe(Effect.provide(withRegistry()))
  )
})
