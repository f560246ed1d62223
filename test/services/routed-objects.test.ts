import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { makeRoutedFsObjectStore, writeRoute } from "../support/keel.js"

// Issue 18: the object API serves the root its route file names — read at start and whenever the file changes,
// so a handoff's switch takes effect at the next request; an unreadable route fails, never falls back.

describe("the routed fs object store", () => {
  it.effect("follows its route file from one root to the other and back", () =>
    Effect.gen(function* () {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-routed-"))
      const a = path.join(dir, "a")
      const b = path.join(dir, "b")
      const route = path.join(dir, "objects.route")
      writeRoute(route, a)
      const store = makeRoutedFsObjectStore(route)
      yield* store.put("state/x.json", new TextEncoder().encode("on a"))
      assert.isTrue(fs.existsSync(path.join(a, "state", "x.json")))

      writeRoute(route, b)
      assert.isTrue(Option.isNone(yield* store.get("state/x.json")), "b has no x")
      yield* store.put("state/y.json", new TextEncoder().encode("on b"))
      assert.isTrue(fs.existsSync(path.join(b, "state", "y.json")))

      writeRoute(route, a)
      const back = Option.getOrThrow(yield* store.get("state/x.json"))
      assert.strictEqual(new TextDecoder().decode(back.bytes), "on a")
      assert.deepStrictEqual(
        (yield* store.list("state/")).map((h) => h.key),
        ["state/x.json"]
      )

      fs.writeFileSync(route, "relative/root\n")
      const failed = yield* Effect.flip(store.get("state/x.json"))
      assert.match(failed.detail, /must name an absolute root/)
      fs.rmSync(route)
      assert.match((yield* Effect.flip(store.head("state/x.json"))).detail, /object route/)
    })
  )
})
