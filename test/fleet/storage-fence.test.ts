import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Leases, ObjectGateway, ServicesTest, STORAGE_FENCE_KEY } from "../support/keel.js"

// Issue 18: while a storage-root handoff holds the storage-write fence, every object write on the host is
// refused (the object API and every writer go through the gateway); reads go on; released, writes resume.

describe("the storage-write fence", () => {
  it.effect("refuses puts, create-only writes and deletes while held; reads go on; released, writes resume", () =>
    Effect.gen(function* () {
      const objects = yield* ObjectGateway
      const leases = yield* Leases
      yield* objects.putJson("state/fence/doc.json", { v: 1 })
      yield* leases.acquire(STORAGE_FENCE_KEY, "handoff:txn-7", "10 minutes")
      const refused = yield* Effect.flip(objects.putJson("state/fence/doc.json", { v: 2 }))
      assert.deepInclude(refused, { _tag: "StorageFenced", code: "STORAGE_FENCED", holder: "handoff:txn-7" })
      assert.strictEqual(
        (yield* Effect.flip(objects.putIfAbsent("state/fence/new.json", new Uint8Array([1]))))._tag,
        "StorageFenced"
      )
      assert.strictEqual((yield* Effect.flip(objects.delete("state/fence/doc.json")))._tag, "StorageFenced")
      assert.deepStrictEqual(Option.getOrThrow(yield* objects.getJson("state/fence/doc.json")), { v: 1 })
      yield* leases.release(STORAGE_FENCE_KEY, "handoff:txn-7")
      yield* objects.putJson("state/fence/doc.json", { v: 3 })
      assert.deepStrictEqual(Option.getOrThrow(yield* objects.getJson("state/fence/doc.json")), { v: 3 })
    }).pipe(Effect.provide(ServicesTest()))
  )
})
