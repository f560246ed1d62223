import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Option } from "effect"
import {
  FsObjectStoreLayer,
  keyProblem,
  MemoryObjectStoreLayer,
  ObjectGateway,
  ObjectStore,
  SqlObjectStoreLayer,
  SqlTest,
  sha256Hex
} from "keel"

const bytes = (text: string) => new TextEncoder().encode(text)
const text = (data: Uint8Array) => new TextDecoder().decode(data)

const adapters = {
  fs: () => FsObjectStoreLayer(fs.mkdtempSync(path.join(os.tmpdir(), "keel-objects-"))),
  sql: () => SqlObjectStoreLayer.pipe(Layer.provide(SqlTest)),
  memory: () => MemoryObjectStoreLayer
} as const

// One contract, every adapter: they must be interchangeable behind the ObjectStore port.
for (const [name, layer] of Object.entries(adapters)) {
  describe(`ObjectStore contract: ${name}`, () => {
    it.effect("put, get and head round-trip bytes with their size and SHA-256; absent keys are none", () =>
      Effect.gen(function* () {
        const store = yield* ObjectStore
        assert.strictEqual(store.scheme, name)
        const head = yield* store.put("state/a/b.json", bytes("hello"))
        assert.strictEqual(head.size, 5)
        assert.strictEqual(head.sha256, sha256Hex("hello"))
        const got = yield* store.get("state/a/b.json")
        assert.isTrue(Option.isSome(got))
        if (Option.isSome(got)) assert.strictEqual(text(got.value.bytes), "hello")
        assert.deepStrictEqual(
          Option.map(yield* store.head("state/a/b.json"), (h) => [h.size, h.sha256]),
          Option.some([5, sha256Hex("hello")])
        )
        assert.isTrue(Option.isNone(yield* store.get("state/a/missing.json")))
        assert.isTrue(Option.isNone(yield* store.head("state/a")))
      }).pipe(Effect.provide(layer()))
    )

    it.effect("put replaces; putIfAbsent creates once and answers the existing object after", () =>
      Effect.gen(function* () {
        const store = yield* ObjectStore
        yield* store.put("k/one", bytes("first"))
        yield* store.put("k/one", bytes("second"))
        const got = yield* store.get("k/one")
        if (Option.isSome(got)) assert.strictEqual(text(got.value.bytes), "second")
        const created = yield* store.putIfAbsent("k/two", bytes("a"))
        assert.isTrue(created.created)
        const again = yield* store.putIfAbsent("k/two", bytes("b"))
        assert.isFalse(again.created)
        assert.strictEqual(again.head.sha256, sha256Hex("a"))
        const kept = yield* store.get("k/two")
        if (Option.isSome(kept)) assert.strictEqual(text(kept.value.bytes), "a")
      }).pipe(Effect.provide(layer()))
    )

    it.effect("list answers heads under a prefix in key order; delete says whether it deleted", () =>
      Effect.gen(function* () {
        const store = yield* ObjectStore
        for (const key of ["p/b", "p/a", "p/sub/c", "pq/x", "q/y", "p_/z"]) yield* store.put(key, bytes(key))
        assert.deepStrictEqual(
          (yield* store.list("p/")).map((h) => h.key),
          ["p/a", "p/b", "p/sub/c"]
        )
        assert.deepStrictEqual(
          (yield* store.list("p")).map((h) => h.key),
          ["p/a", "p/b", "p/sub/c", "p_/z", "pq/x"]
        )
        assert.deepStrictEqual(
          (yield* store.list("p_")).map((h) => h.key),
          ["p_/z"]
        )
        assert.isTrue(yield* store.delete("p/a"))
        assert.isFalse(yield* store.delete("p/a"))
        assert.deepStrictEqual(
          (yield* store.list("p/")).map((h) => h.key),
          ["p/b", "p/sub/c"]
        )
      }).pipe(Effect.provide(layer()))
    )
  })
}

describe("object keys", () => {
  it("refuse traversal, absolute paths, NUL and other tricks", () => {
    for (const key of [
      "",
      "/etc/passwd",
      "../escape",
      "state/../../escape",
      "state/./x",
      "state//x",
      "state/x/",
      "state/a\u0000b",
      "state\\x",
      "C:/x",
      "x".repeat(1025)
    ]) {
      assert.isString(keyProblem(key), JSON.stringify(key))
    }
    for (const key of ["state/a.json", "host_health/web-1.json", "releases/keel/1.2.3/release.tar.gz", "a..b/c"])
      assert.isUndefined(keyProblem(key), key)
  })
})

const Gateway = (env: Record<string, string> = {}) =>
  ObjectGateway.Default.pipe(
    Layer.provideMerge(MemoryObjectStoreLayer),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))
  )

describe("the object gateway", () => {
  it.effect("writes only under a configured namespace prefix; the refusal names the key", () =>
    Effect.gen(function* () {
      const gateway = yield* ObjectGateway
      yield* gateway.put("host_health/web-1.json", bytes("{}"))
      yield* gateway.put("state/autonomy/services/latest.json", bytes("{}"))
      const refused = yield* Effect.flip(gateway.put("secrets/x", bytes("no")))
      assert.strictEqual(refused._tag, "ObjectWriteUnauthorized")
      if (refused._tag === "ObjectWriteUnauthorized") assert.strictEqual(refused.key, "secrets/x")
      assert.strictEqual((yield* Effect.flip(gateway.delete("secrets/x")))._tag, "ObjectWriteUnauthorized")
      assert.isTrue(Option.isNone(yield* gateway.get("secrets/x")))
    }).pipe(Effect.provide(Gateway()))
  )

  it.effect("refuses traversal keys before any backend sees them", () =>
    Effect.gen(function* () {
      const gateway = yield* ObjectGateway
      for (const key of ["state/../escape", "/state/x", "state/a\u0000b"]) {
        const refused = yield* Effect.flip(gateway.put(key, bytes("x")))
        assert.strictEqual(refused._tag, "InvalidObjectKey", key)
        assert.strictEqual((yield* Effect.flip(gateway.get(key)))._tag, "InvalidObjectKey")
      }
    }).pipe(Effect.provide(Gateway()))
  )

  it.effect("immutable prefixes take create-only writes: same bytes again is a no-op, other bytes are refused", () =>
    Effect.gen(function* () {
      const gateway = yield* ObjectGateway
      yield* gateway.put("releases/keel/1.0.0/release.json", bytes("v1"))
      yield* gateway.put("releases/keel/1.0.0/release.json", bytes("v1"))
      const overwrite = yield* Effect.flip(gateway.put("releases/keel/1.0.0/release.json", bytes("v2")))
      assert.strictEqual(overwrite._tag, "ImmutableObjectWrite")
      if (overwrite._tag === "ImmutableObjectWrite") assert.strictEqual(overwrite.code, "NON_IMMUTABLE_RELEASE_WRITE")
      assert.strictEqual(
        (yield* Effect.flip(gateway.delete("releases/keel/1.0.0/release.json")))._tag,
        "ImmutableObjectWrite"
      )
      const kept = yield* gateway.get("releases/keel/1.0.0/release.json")
      if (Option.isSome(kept)) assert.strictEqual(text(kept.value.bytes), "v1")
    }).pipe(Effect.provide(Gateway()))
  )

  it.effect("object URIs are <scheme>://<key> and parse back; prefixes come from config", () =>
    Effect.gen(function* () {
      const gateway = yield* ObjectGateway
      assert.strictEqual(gateway.uri("release-runs/r1/run.json"), "memory://release-runs/r1/run.json")
      assert.strictEqual(yield* gateway.keyOf("memory://release-runs/r1/run.json"), "release-runs/r1/run.json")
      assert.strictEqual((yield* Effect.flip(gateway.keyOf("s3://bucket/x")))._tag, "InvalidObjectUri")
      yield* gateway.put("custom/x", bytes("ok"))
      assert.strictEqual((yield* Effect.flip(gateway.put("state/x", bytes("no"))))._tag, "ObjectWriteUnauthorized")
    }).pipe(Effect.provide(Gateway({ KEEL_OBJECT_PREFIXES: "custom/", KEEL_OBJECT_IMMUTABLE_PREFIXES: "" })))
  )
})

describe("the filesystem adapter", () => {
  it.effect("writes atomically: no temporary file is left, and a create-only write never replaces", () =>
    Effect.gen(function* () {
      const root = fs.mkdtempSync(path.join(os.tmpdir(), "keel-objects-"))
      const store = yield* Effect.provide(ObjectStore, FsObjectStoreLayer(root))
      yield* store.put("state/x.json", bytes("one"))
      yield* store.put("state/x.json", bytes("two"))
      yield* store.putIfAbsent("state/x.json", bytes("three"))
      assert.deepStrictEqual(fs.readdirSync(path.join(root, "state")), ["x.json"])
      assert.strictEqual(fs.readFileSync(path.join(root, "state", "x.json"), "utf8"), "two")
    })
  )
})
