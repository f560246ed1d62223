import { Config, Effect, Option, Schema, type Stream } from "effect"
import {
  ImmutableObjectWrite,
  ObjectStoreError,
  ObjectWriteUnauthorized,
  StorageFenced
} from "../../../contracts/shared/ObjectErrors.js"
import { sha256Hex } from "../Digest.js"
import { checkKey, type ListPage, ObjectStore, type WriteCondition } from "./ObjectStore.js"
import { StorageFence } from "./StorageFence.js"

export class InvalidObjectUri extends Schema.TaggedError<InvalidObjectUri>()("InvalidObjectUri", {
  code: Schema.Literal("INVALID_OBJECT_URI"),
  uri: Schema.String,
  detail: Schema.String
}) {}

const prefixList = (name: string, fallback: string) =>
  Config.string(name).pipe(
    Config.withDefault(fallback),
    Config.map((text) =>
      text
        .split(",")
        .map((p) => p.trim())
        .filter((p) => p.length > 0)
    )
  )

/**
 * Every object write of the fleet goes through here: a key is written only under a configured
 * namespace prefix, immutable prefixes take create-only writes, and every refusal names its key.
 * Reads are open to any valid key.
 */
export class ObjectGateway extends Effect.Service<ObjectGateway>()("platform/ObjectGateway", {
  effect: Effect.gen(function* () {
    const store = yield* ObjectStore
    const fence = yield* Effect.serviceOption(StorageFence)
    const writable = yield* prefixList("KEEL_OBJECT_PREFIXES", "host_health/,state/,release-runs/,releases/")
    // Releases, and the reconciler's run reports (immutable records: each run id is written once).
    const immutable = yield* prefixList("KEEL_OBJECT_IMMUTABLE_PREFIXES", "releases/,state/autonomy/services/runs/")

    const authorize = (key: string) =>
      Effect.gen(function* () {
        yield* checkKey(key)
        if (!writable.some((prefix) => key.startsWith(prefix))) {
          return yield* new ObjectWriteUnauthorized({
            code: "OBJECT_WRITE_UNAUTHORIZED",
            key,
            detail: `writes are allowed only under ${writable.join(", ")}`
          })
        }
        // A storage-root handoff moving this host's data: nothing is written until it releases the fence.
        if (Option.isSome(fence)) {
          const holder = yield* fence.value.holder
          if (Option.isSome(holder))
            return yield* new StorageFenced({
              code: "STORAGE_FENCED",
              key,
              holder: holder.value,
              detail: `a storage-root handoff (${holder.value}) holds the storage-write fence: retry when it ends`
            })
        }
        return immutable.some((prefix) => key.startsWith(prefix))
      })

    const refuseOverwrite = (key: string, why = "already holds other bytes") =>
      new ImmutableObjectWrite({
        code: "NON_IMMUTABLE_RELEASE_WRITE",
        key,
        detail: `${key} is under an immutable prefix and ${why}`
      })

    /**
     * Writes an object. Under an immutable prefix the write is create-only: writing the same bytes
     * again is a no-op (so publication can be retried), different bytes are refused.
     */
    const put = Effect.fn("ObjectGateway.put")(function* (key: string, bytes: Uint8Array) {
      const isImmutable = yield* authorize(key)
      if (!isImmutable) return yield* store.put(key, bytes)
      const { created, head } = yield* store.putIfAbsent(key, bytes)
      if (!created && head.sha256 !== sha256Hex(bytes)) return yield* refuseOverwrite(key)
      return head
    })

    /** Creates an object only if it does not exist yet; answers whether it did. */
    const putIfAbsent = Effect.fn("ObjectGateway.putIfAbsent")(function* (key: string, bytes: Uint8Array) {
      yield* authorize(key)
      return yield* store.putIfAbsent(key, bytes)
    })

    /**
     * Writes a streamed body under a condition (the object API's PUT). Under an immutable prefix the write is
     * create-only whatever was asked: the same bytes again is a no-op (`written: false`, the head), other
     * bytes are refused, and a compare-and-set is refused (an immutable object never changes).
     */
    const write = Effect.fn("ObjectGateway.write")(function* <E>(
      key: string,
      body: Stream.Stream<Uint8Array, E>,
      condition: WriteCondition
    ) {
      const isImmutable = yield* authorize(key)
      if (!isImmutable) return yield* store.write(key, body, condition)
      if (condition.kind === "match") return yield* refuseOverwrite(key, "never changes (no If-Match)")
      const outcome = yield* store.write(key, body, { kind: "absent" })
      if (outcome.written || condition.kind === "absent") return outcome
      if (Option.isSome(outcome.head) && outcome.head.value.sha256 === outcome.received.sha256) return outcome
      return yield* refuseOverwrite(key)
    })

    const remove = Effect.fn("ObjectGateway.delete")(function* (key: string) {
      if (yield* authorize(key)) return yield* refuseOverwrite(key, "is never deleted")
      return yield* store.delete(key)
    })

    const get = (key: string) => Effect.flatMap(checkKey(key), store.get)
    const head = (key: string) => Effect.flatMap(checkKey(key), store.head)
    const list = (prefix: string, page?: ListPage) => store.list(prefix, page)

    /** `<scheme>://<key>`: the scheme names the configured backend. */
    const uri = (key: string) => `${store.scheme}://${key}`

    const keyOf = (uri: string) =>
      Effect.gen(function* () {
        const prefix = `${store.scheme}://`
        if (!uri.startsWith(prefix)) {
          return yield* new InvalidObjectUri({
            code: "INVALID_OBJECT_URI",
            uri,
            detail: `this gateway's objects are ${prefix}<key>`
          })
        }
        return yield* checkKey(uri.slice(prefix.length))
      })

    /** Reads JSON; none when the object is absent; bytes that are not JSON are a store error naming the key. */
    const getJson = (key: string) =>
      Effect.flatMap(get(key), (found) =>
        Option.isNone(found)
          ? Effect.succeed(Option.none<unknown>())
          : Effect.try({
              try: () => Option.some(JSON.parse(new TextDecoder().decode(found.value.bytes)) as unknown),
              catch: (error) =>
                new ObjectStoreError({
                  code: "OBJECT_STORE_ERROR",
                  key,
                  detail: `${key} is not JSON: ${(error as Error).message}`
                })
            })
      )

    const putJson = (key: string, value: unknown) =>
      put(key, new TextEncoder().encode(`${JSON.stringify(value, null, 2)}\n`))

    return {
      put,
      putIfAbsent,
      write,
      read: (key: string) => Effect.flatMap(checkKey(key), store.read),
      delete: remove,
      get,
      head,
      list,
      uri,
      keyOf,
      getJson,
      putJson,
      scheme: store.scheme
    } as const
  })
}) {}
