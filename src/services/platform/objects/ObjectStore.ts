import { HttpApiSchema } from "@effect/platform"
import { Context, Effect, type Option, Schema } from "effect"

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

/** The backend failed (I/O, database); the key says where. */
export class ObjectStoreError extends Schema.TaggedError<ObjectStoreError>()("ObjectStoreError", {
  code: Schema.Literal("OBJECT_STORE_ERROR"),
  key: Schema.String,
  detail: Schema.String
}) {}

export class InvalidObjectKey extends Schema.TaggedError<InvalidObjectKey>()(
  "InvalidObjectKey",
  { code: Schema.Literal("INVALID_OBJECT_KEY"), key: Schema.String, detail: Schema.String },
  HttpApiSchema.annotations({ status: 400 })
) {}

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
    /** Heads of every object whose key starts with `prefix`, in key order. */
    readonly list: (prefix: string) => Effect.Effect<ReadonlyArray<ObjectHead>, ObjectStoreError>
    /** Whether something was deleted. */
    readonly delete: (key: string) => Effect.Effect<boolean, ObjectStoreError>
  }
>() {}

const MAX_KEY_LENGTH = 1024

/**
 * Why `key` is not a valid object key, or undefined when it is: relative, slash-separated, no empty,
 * `.` or `..` segment, no NUL or other control character, no backslash, at most 1024 characters.
 * Keys never name a place outside their store, whatever the backend.
 */
export const keyProblem = (key: string): string | undefined => {
  if (key.length === 0) return "an object key must not be empty"
  if (key.length > MAX_KEY_LENGTH) return `an object key is at most ${MAX_KEY_LENGTH} characters`
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (/[\u0000-\u001f\u007f]/.test(key)) return "an object key must not contain NUL or control characters"
  if (key.includes("\\")) return "an object key must not contain a backslash"
  if (key.startsWith("/")) return "an object key must be relative (no leading /)"
  if (/^[A-Za-z]:/.test(key)) return "an object key must not name a drive"
  for (const segment of key.split("/")) {
    if (segment === "") return "an object key must not have empty segments or a trailing /"
    if (segment === "." || segment === "..") return "an object key must not contain . or .. segments"
  }
  return undefined
}

/** The key, or an InvalidObjectKey saying why not. */
export const checkKey = (key: string): Effect.Effect<string, InvalidObjectKey> => {
  const problem = keyProblem(key)
  return problem === undefined
    ? Effect.succeed(key)
    : Effect.fail(new InvalidObjectKey({ code: "INVALID_OBJECT_KEY", key, detail: problem }))
}
