import { Chunk, Context, Effect, Option, Stream } from "effect"
import { InvalidObjectKey, ObjectStoreError } from "../../../contracts/shared/ObjectErrors.js"
import { hasControlCharacter } from "../../../contracts/shared/Text.js"
import { sha256Hex } from "../Digest.js"

export interface ObjectHead {
  readonly key: string
  readonly size: number
  /** Lowercase hex SHA-256 of the bytes. */
  readonly sha256: string
  readonly modifiedAt: number
}

export interface StoredObject extends ObjectHead {
  readonly bytes: Uint8Array
}

/**
 * When a streamed write may happen: always, only while the key is absent (S3 `If-None-Match: *`), or only
 * while the object's SHA-256 is the one given (S3 `If-Match`).
 */
export type WriteCondition =
  | { readonly kind: "always" }
  | { readonly kind: "absent" }
  | { readonly kind: "match"; readonly sha256: string }

export interface WriteOutcome {
  /** Whether the bytes were stored. */
  readonly written: boolean
  /** The size and SHA-256 of the body received (stored or not). */
  readonly received: { readonly size: number; readonly sha256: string }
  /** The object's head after the call: the new one when written, else the one that stopped the write. */
  readonly head: Option.Option<ObjectHead>
}

/** A page of a listing: keys after `after` (exclusive), at most `limit` of them. */
export interface ListPage {
  readonly after?: string | undefined
  readonly limit?: number | undefined
}

/** An object to read as a stream: its head and its bytes (read once). */
export interface ObjectBody {
  readonly head: ObjectHead
  readonly body: Stream.Stream<Uint8Array, ObjectStoreError>
}

/**
 * The port every object backend implements. Keys are relative, slash-separated paths that
 * `objectKey` accepts; adapters may assume that and still refuse anything else.
 */
export class ObjectStore extends Context.Tag("platform/ObjectStore")<
  ObjectStore,
  {
    /** Names the backend in object URIs: `<scheme>://<key>`. */
    readonly scheme: string
    readonly get: (key: string) => Effect.Effect<Option.Option<StoredObject>, ObjectStoreError>
    readonly head: (key: string) => Effect.Effect<Option.Option<ObjectHead>, ObjectStoreError>
    /** Replaces the object atomically: a reader sees the old bytes or the new, never a mix. */
    readonly put: (key: string, bytes: Uint8Array) => Effect.Effect<ObjectHead, ObjectStoreError>
    /** Creates the object unless it exists; answers the existing head when it does (and writes nothing). */
    readonly putIfAbsent: (
      key: string,
      bytes: Uint8Array
    ) => Effect.Effect<{ readonly created: boolean; readonly head: ObjectHead }, ObjectStoreError>
    /**
     * Replaces the object only while its SHA-256 is `expected` (S3's `If-Match`): atomically against every
     * other write of the same key. On a mismatch (or when the object is absent) nothing is written and the
     * current head is answered, so the caller can say what it found.
     */
    readonly putIfMatch: (
      key: string,
      expected: string,
      bytes: Uint8Array
    ) => Effect.Effect<{ readonly replaced: boolean; readonly head: Option.Option<ObjectHead> }, ObjectStoreError>
    /**
     * Writes a streamed body under a condition. The `fs` adapter never holds the body in memory (it is
     * written to a temporary file, hashed on the way); the others collect it.
     */
    readonly write: <E>(
      key: string,
      body: Stream.Stream<Uint8Array, E>,
      condition: WriteCondition
    ) => Effect.Effect<WriteOutcome, ObjectStoreError | E>
    /** Reads an object as a stream (the `fs` adapter reads from the file as the stream is pulled). */
    readonly read: (key: string) => Effect.Effect<Option.Option<ObjectBody>, ObjectStoreError>
    /** Heads of every object whose key starts with `prefix`, in key order. */
    readonly list: (prefix: string, page?: ListPage) => Effect.Effect<ReadonlyArray<ObjectHead>, ObjectStoreError>
    /** Whether something was deleted. */
    readonly delete: (key: string) => Effect.Effect<boolean, ObjectStoreError>
  }
>() {}

const MAX_KEY_LENGTH = 1024

/**
 * The most bytes (UTF-8) a key's segment may have: a file name is at most 255 bytes on the file systems the file
 * store runs on (ext4, XFS, APFS), and the store keeps a write lock `.keel-lock-<name>` beside each object.
 */
export const MAX_SEGMENT_BYTES = 255 - ".keel-lock-".length

/**
 * Why `key` is not a valid object key, or undefined when it is: relative, slash-separated, no empty,
 * `.` or `..` segment, no NUL or other control character, no backslash, at most 1024 characters, each segment
 * at most MAX_SEGMENT_BYTES bytes.
 * Keys never name a place outside their store, whatever the backend.
 */
export const keyProblem = (key: string): string | undefined => {
  if (key.length === 0) return "an object key must not be empty"
  if (key.length > MAX_KEY_LENGTH) return `an object key is at most ${MAX_KEY_LENGTH} characters`
  if (hasControlCharacter(key)) return "an object key must not contain NUL or control characters"
  if (key.includes("\\")) return "an object key must not contain a backslash"
  if (key.startsWith("/")) return "an object key must be relative (no leading /)"
  if (/^[A-Za-z]:/.test(key)) return "an object key must not name a drive"
  for (const segment of key.split("/")) {
    if (segment === "") return "an object key must not have empty segments or a trailing /"
    if (segment === "." || segment === "..") return "an object key must not contain . or .. segments"
    // The file store's own lock and temporary files: a key named like one could fake a write lock (stalling
    // every write beside it) or be deleted as a stale lock. Reserved in every store, so keys move between them.
    if (RESERVED_SEGMENT.test(segment)) return "an object key's segments must not start with .keel-lock- or .keel-tmp-"
    // Refused in every store, so a key one adapter holds is a key every adapter holds.
    if (utf8.encode(segment).byteLength > MAX_SEGMENT_BYTES)
      return `an object key's segments are at most ${MAX_SEGMENT_BYTES} bytes (UTF-8) each`
  }
  return undefined
}

const RESERVED_SEGMENT = /^\.keel-(?:lock|tmp)-/
const utf8 = new TextEncoder()

/** The key, or an InvalidObjectKey saying why not. */
export const checkKey = (key: string): Effect.Effect<string, InvalidObjectKey> => {
  const problem = keyProblem(key)
  return problem === undefined
    ? Effect.succeed(key)
    : Effect.fail(new InvalidObjectKey({ code: "INVALID_OBJECT_KEY", key, detail: problem }))
}

type BytesStore = Pick<ObjectStore["Type"], "get" | "put" | "putIfAbsent" | "putIfMatch">

/** `write` for adapters that hold bytes anyway (sql, memory): collect the body, then the matching write. */
export const collectingWrite =
  (store: BytesStore): ObjectStore["Type"]["write"] =>
  (key, body, condition) =>
    Effect.gen(function* () {
      const chunks = yield* Stream.runCollect(body)
      const bytes = new Uint8Array(Chunk.reduce(chunks, 0, (n, c) => n + c.byteLength))
      let at = 0
      for (const chunk of chunks) {
        bytes.set(chunk, at)
        at += chunk.byteLength
      }
      const received = { size: bytes.byteLength, sha256: sha256Hex(bytes) }
      switch (condition.kind) {
        case "always":
          return { written: true, received, head: Option.some(yield* store.put(key, bytes)) }
        case "absent": {
          const { created, head } = yield* store.putIfAbsent(key, bytes)
          return { written: created, received, head: Option.some(head) }
        }
        case "match": {
          const { replaced, head } = yield* store.putIfMatch(key, condition.sha256, bytes)
          return { written: replaced, received, head }
        }
      }
    })

/** `read` for adapters that hold bytes anyway: the stored bytes as a one-chunk stream. */
export const bytesRead =
  (store: Pick<ObjectStore["Type"], "get">): ObjectStore["Type"]["read"] =>
  (key) =>
    Effect.map(
      store.get(key),
      Option.map(({ bytes, ...head }) => ({ head, body: Stream.succeed(bytes) }))
    )

/**
 * The same key rules in every adapter: `store`'s methods refuse a key `keyProblem` refuses, as the file store
 * does of itself (its keys are paths), so a store used directly never holds a key the others could not.
 */
export const withKeyRules = (store: ObjectStore["Type"]): ObjectStore["Type"] => {
  const refused = (key: string) => {
    const problem = keyProblem(key)
    return problem === undefined
      ? undefined
      : new ObjectStoreError({ code: "OBJECT_STORE_ERROR", key: key.slice(0, 200), detail: problem })
  }
  const guarded =
    <Args extends [string, ...Array<unknown>], A, E>(method: (...args: Args) => Effect.Effect<A, E>) =>
    (...args: Args): Effect.Effect<A, E | ObjectStoreError> => {
      const error = refused(args[0])
      return error === undefined ? method(...args) : Effect.fail(error)
    }
  return {
    ...store,
    get: guarded(store.get),
    head: guarded(store.head),
    put: guarded(store.put),
    putIfAbsent: guarded(store.putIfAbsent),
    putIfMatch: guarded(store.putIfMatch),
    write: (key, body, condition) => {
      const error = refused(key)
      return error === undefined ? store.write(key, body, condition) : Effect.fail(error)
    },
    read: guarded(store.read),
    delete: guarded(store.delete)
  }
}
