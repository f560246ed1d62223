import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer } from "effect"
import { AppConfig, AppConfigTest, ObjectStore, ObjectStoreLive, SqlTest } from "../support/keel.js"

describe("the layers embedders build on", () => {
  it.effect("AppTest settings without a dataDir: a fresh temporary directory, removed with the layer", () =>
    Effect.gen(function* () {
      const seen = yield* Effect.scoped(
        Effect.gen(function* () {
          const context = yield* Layer.build(AppConfigTest())
          const dir = Context.get(context, AppConfig).dataDir
          assert.isTrue(dir.startsWith(os.tmpdir()), dir)
          assert.isTrue(fs.statSync(dir).isDirectory())
          return dir
        })
      )
      assert.isFalse(fs.existsSync(seen))
      const given = fs.mkdtempSync(path.join(os.tmpdir(), "keel-given-"))
      const kept = yield* Effect.scoped(
        Effect.map(Layer.build(AppConfigTest({ dataDir: given })), (c) => Context.get(c, AppConfig).dataDir)
      )
      assert.strictEqual(kept, given)
      assert.isTrue(fs.existsSync(given), "a given dataDir is the caller's: never removed")
    })
  )

  it.effect("KEEL_OBJECT_STORE=memory: objects live in the process, nothing under the data directory", () =>
    Effect.gen(function* () {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-objects-"))
      yield* Effect.gen(function* () {
        const store = yield* ObjectStore
        yield* store.put("state/x.json", new TextEncoder().encode("{}"))
        const read = yield* store.get("state/x.json")
        assert.isTrue(read._tag === "Some")
      }).pipe(
        Effect.provide(ObjectStoreLive.pipe(Layer.provide(Layer.merge(AppConfigTest({ dataDir }), SqlTest)))),
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["KEEL_OBJECT_STORE", "memory"]])))
      )
      assert.deepStrictEqual(fs.readdirSync(dataDir), [])
    })
  )
})
