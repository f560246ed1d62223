import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Option, Stream } from "effect"
import {
  FsObjectStoreLayer,
  keyProblem,
  MemoryObjectStoreLayer,
  ObjectGateway,
  ObjectStore,
  prefixEnd,
  SqlObjectStoreLayer,
  SqlTest,
  sha256Hex
} from "../support/keel.js"

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
    it.effect("every adapter refuses the keys the key rules refuse, for every operation", () =>
      Effect.gen(function* () {
        const store = yield* ObjectStore
        for (const key of ["../escape", "/abs", "a//b", "", "state/.keel-lock-x", `state/${"n".repeat(245)}`]) {
          assert.strictEqual((yield* Effect.flip(store.put(key, bytes("x"))))._tag, "ObjectStoreError", key)
          assert.strictEqual((yield* Effect.flip(store.get(key)))._tag, "ObjectStoreError", key)
          assert.strictEqual((yield* Effect.flip(store.delete(key)))._tag, "ObjectStoreError", key)
        }
      }).pipe(Effect.provide(layer()))
    )

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

    it.effect("putIfMatch replaces only the bytes it was shown; a mismatch or an absent key writes nothing", () =>
      Effect.gen(function* () {
        const store = yield* ObjectStore
        const first = yield* store.put("cas/doc", bytes("v1"))
        const swapped = yield* store.putIfMatch("cas/doc", first.sha256, bytes("v2"))
        assert.isTrue(swapped.replaced)
        assert.strictEqual(Option.getOrThrow(swapped.head).sha256, sha256Hex("v2"))
        // The old digest no longer matches: the current head is answered, the bytes stay v2.
        const stale = yield* store.putIfMatch("cas/doc", first.sha256, bytes("v3"))
        assert.isFalse(stale.replaced)
        assert.strictEqual(Option.getOrThrow(stale.head).sha256, sha256Hex("v2"))
        assert.strictEqual(text(Option.getOrThrow(yield* store.get("cas/doc")).bytes), "v2")
        const absent = yield* store.putIfMatch("cas/none", sha256Hex("v1"), bytes("x"))
        assert.deepStrictEqual(absent, { replaced: false, head: Option.none() })
        assert.isTrue(Option.isNone(yield* store.get("cas/none")))
        assert.deepStrictEqual(
          (yield* store.list("cas/")).map((h) => h.key),
          ["cas/doc"]
        )
      }).pipe(Effect.provide(layer()))
    )

    it.effect("compare-and-set races: of 12 writers shown the same digest exactly one wins", () =>
      Effect.gen(function* () {
        const store = yield* ObjectStore
        const base = yield* store.put("cas/race", bytes("base"))
        const outcomes = yield* Effect.all(
          Array.from({ length: 12 }, (_, i) => store.putIfMatch("cas/race", base.sha256, bytes(`writer-${i}`))),
          { concurrency: "unbounded" }
        )
        const winners = outcomes.flatMap((outcome, i) => (outcome.replaced ? [i] : []))
        assert.strictEqual(winners.length, 1)
        const stored = text(Option.getOrThrow(yield* store.get("cas/race")).bytes)
        assert.strictEqual(stored, `writer-${winners[0]}`)
        // Every loser was told what it found instead: the winner's bytes.
        for (const outcome of outcomes.filter((o) => !o.replaced))
          assert.strictEqual(Option.getOrThrow(outcome.head).sha256, sha256Hex(stored))
        // Plain writes and deletes still work around the locks, and leave none behind.
        yield* store.put("cas/race", bytes("after"))
        assert.isTrue(yield* store.delete("cas/race"))
        assert.deepStrictEqual(
          (yield* store.list("cas/")).map((h) => h.key),
          []
        )
      }).pipe(Effect.provide(layer()))
    )

    it.effect("write streams a body under a condition; read streams it back", () =>
      Effect.gen(function* () {
        const store = yield* ObjectStore
        const chunks = (...parts: Array<string>) => Stream.fromIterable(parts.map(bytes))
        const all = (body: Stream.Stream<Uint8Array, unknown>) =>
          Effect.map(Stream.runCollect(body), (c) => [...c].map(text).join(""))
        const first = yield* store.write("w/doc", chunks("he", "llo"), { kind: "always" })
        assert.isTrue(first.written)
        assert.strictEqual(Option.getOrThrow(first.head).sha256, sha256Hex("hello"))
        assert.strictEqual(Option.getOrThrow(first.head).size, 5)
        const read = Option.getOrThrow(yield* store.read("w/doc"))
        assert.strictEqual(read.head.sha256, sha256Hex("hello"))
        assert.strictEqual(yield* all(read.body), "hello")
        // Create-only: refused while the key exists, with the existing head.
        const again = yield* store.write("w/doc", chunks("other"), { kind: "absent" })
        assert.isFalse(again.written)
        assert.strictEqual(Option.getOrThrow(again.head).sha256, sha256Hex("hello"))
        // Compare-and-set: a stale digest writes nothing; the current one replaces.
        const stale = yield* store.write("w/doc", chunks("x"), { kind: "match", sha256: sha256Hex("nope") })
        assert.isFalse(stale.written)
        const swapped = yield* store.write("w/doc", chunks("wor", "ld"), { kind: "match", sha256: sha256Hex("hello") })
        assert.isTrue(swapped.written)
        assert.strictEqual(yield* all(Option.getOrThrow(yield* store.read("w/doc")).body), "world")
        assert.isTrue(Option.isNone(yield* store.read("w/none")))
        // A body that fails midway stores nothing and leaves no trace.
        const broken = Stream.concat(chunks("partial"), Stream.fail("connection reset" as const))
        assert.strictEqual(yield* Effect.flip(store.write("w/broken", broken, { kind: "always" })), "connection reset")
        assert.isTrue(Option.isNone(yield* store.head("w/broken")))
        assert.deepStrictEqual(
          (yield* store.list("w/")).map((h) => h.key),
          ["w/doc"]
        )
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
        // A page: keys after `after` (exclusive), at most `limit`, in key order.
        assert.deepStrictEqual(
          (yield* store.list("p", { after: "p/b", limit: 2 })).map((h) => h.key),
          ["p/sub/c", "p_/z"]
        )
        assert.deepStrictEqual(
          (yield* store.list("p/", { after: "p/sub/c" })).map((h) => h.key),
          []
        )
        assert.deepStrictEqual(
          (yield* store.list("p/", { limit: 1 })).map((h) => h.key),
          ["p/a"]
        )
        assert.isTrue(yield* store.delete("p/a"))
        assert.isFalse(yield* store.delete("p/a"))
        assert.deepStrictEqual(
          (yield* store.list("p/")).map((h) => h.key),
          ["p/b", "p/sub/c"]
        )
      }).pipe(Effect.provide(layer()))
    )

    it.effect("a prefix matches case-sensitively, and % and _ in it are themselves", () =>
      Effect.gen(function* () {
        const store = yield* ObjectStore
        for (const key of ["Case/A", "case/b", "case/é", "case%/c", "cas/d", "caseX/e", "CASE/f"])
          yield* store.put(key, bytes(key))
        assert.deepStrictEqual(
          (yield* store.list("case/")).map((h) => h.key),
          ["case/b", "case/é"]
        )
        assert.deepStrictEqual(
          (yield* store.list("Case/")).map((h) => h.key),
          ["Case/A"]
        )
        assert.deepStrictEqual(
          (yield* store.list("case%")).map((h) => h.key),
          ["case%/c"]
        )
        assert.deepStrictEqual(
          (yield* store.list("cas_")).map((h) => h.key),
          []
        )
      }).pipe(Effect.provide(layer()))
    )
  })
}

describe("the SQL store's prefix range", () => {
  it("ends at the least text past every key with the prefix, in code point order", () => {
    assert.strictEqual(prefixEnd("state/"), "state0")
    assert.strictEqual(prefixEnd("a\u{10FFFF}"), "b")
    assert.strictEqual(prefixEnd("a\uD7FF"), "a\uE000")
    assert.strictEqual(prefixEnd("a\uFFFF"), "a\u{10000}")
    assert.isUndefined(prefixEnd(""))
    assert.isUndefined(prefixEnd("\u{10FFFF}"))
  })
})

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
      "x".repeat(1025),
      // The file store's own lock and temporary names: a planted lock would stall every write beside it.
      "state/registry/.keel-lock-last-valid.json",
      ".keel-tmp-123/x",
      "state/.keel-lock-",
      // A segment no file system holds as a name beside its lock (255 bytes less `.keel-lock-`): by bytes, not characters.
      `state/${"n".repeat(245)}`,
      `state/${"é".repeat(123)}`
    ]) {
      assert.isString(keyProblem(key), JSON.stringify(key))
    }
    for (const key of [
      "state/a.json",
      "host_health/web-1.json",
      "releases/keel/1.2.3/release.tar.gz",
      "a..b/c",
      "state/.keel-locks.json",
      "state/keel-lock-x",
      `state/${"n".repeat(244)}`,
      `state/${"é".repeat(122)}`
    ])
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

  it.effect("the longest segment the key rules allow is stored, replaced under its lock and deleted", () =>
    Effect.gen(function* () {
      const root = fs.mkdtempSync(path.join(os.tmpdir(), "keel-objects-"))
      const store = yield* Effect.provide(ObjectStore, FsObjectStoreLayer(root))
      for (const key of [`state/${"n".repeat(244)}`, `state/${"é".repeat(122)}`]) {
        const head = yield* store.put(key, bytes("one"))
        assert.isTrue((yield* store.putIfMatch(key, head.sha256, bytes("two"))).replaced, key)
        assert.strictEqual(text(Option.getOrThrow(yield* store.get(key)).bytes), "two")
        assert.isTrue(yield* store.delete(key), key)
      }
    })
  )

  it.effect(
    "a key that is both an object and a prefix of others is refused, naming the key, never the server's paths",
    () =>
      Effect.gen(function* () {
        const root = fs.mkdtempSync(path.join(os.tmpdir(), "keel-objects-"))
        const store = yield* Effect.provide(ObjectStore, FsObjectStoreLayer(root))
        yield* store.put("state/dir/x", bytes("x"))
        yield* store.put("state/file", bytes("f"))
        for (const key of ["state/dir", "state/file/below"]) {
          const refused = yield* Effect.flip(store.put(key, bytes("y")))
          assert.include(refused.detail, `${key} cannot be stored beside the keys it conflicts with`)
          assert.notInclude(refused.detail, root)
        }
      })
  )

  it.effect(
    "compare-and-set across processes: of 6 processes shown the same digest exactly one wins",
    () =>
      Effect.gen(function* () {
        const root = fs.mkdtempSync(path.join(os.tmpdir(), "keel-objects-"))
        const store = yield* Effect.provide(ObjectStore, FsObjectStoreLayer(root))
        const base = yield* store.put("state/cas.json", bytes("base"))
        const script = `
        const { Effect } = await import("effect")
        const { Platform: { FsObjectStoreLayer, ObjectStore } } = await import("keel")
        const [root, expected, value] = process.argv.slice(1)
        const swap = Effect.flatMap(ObjectStore, (s) => s.putIfMatch("state/cas.json", expected, new TextEncoder().encode(value)))
        const outcome = await Effect.runPromise(Effect.provide(swap, FsObjectStoreLayer(root)))
        process.stdout.write(String(outcome.replaced))`
        const cwd = fileURLToPath(new URL("../..", import.meta.url))
        const runs = yield* Effect.promise(() =>
          Promise.all(
            Array.from(
              { length: 6 },
              (_, i) =>
                new Promise<string>((resolve, reject) =>
                  execFile(
                    process.execPath,
                    ["--input-type=module", "-e", script, root, base.sha256, `process-${i}`],
                    // Six processes each load the library at once: on a loaded 2-core machine that alone takes a minute.
                    { cwd, timeout: 240_000 },
                    (error, stdout) => (error ? reject(error) : resolve(stdout))
                  )
                )
            )
          )
        )
        assert.deepStrictEqual(runs.filter((r) => r === "true").length, 1, runs.join(","))
        const winner = runs.indexOf("true")
        assert.strictEqual(fs.readFileSync(path.join(root, "state", "cas.json"), "utf8"), `process-${winner}`)
        assert.deepStrictEqual(fs.readdirSync(path.join(root, "state")), ["cas.json"])
      }),
    300_000
  )
})
