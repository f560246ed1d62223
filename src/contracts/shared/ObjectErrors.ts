import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

/**
 * The object store's errors that cross the wire (the control plane's object API answers them; the fleet's object
 * clients read them back). The store, the gateway and the storage fence fail with them.
 */

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

export class ObjectWriteUnauthorized extends Schema.TaggedError<ObjectWriteUnauthorized>()(
  "ObjectWriteUnauthorized",
  { code: Schema.Literal("OBJECT_WRITE_UNAUTHORIZED"), key: Schema.String, detail: Schema.String },
  HttpApiSchema.annotations({ status: 403 })
) {}

export class ImmutableObjectWrite extends Schema.TaggedError<ImmutableObjectWrite>()(
  "ImmutableObjectWrite",
  { code: Schema.Literal("NON_IMMUTABLE_RELEASE_WRITE"), key: Schema.String, detail: Schema.String },
  HttpApiSchema.annotations({ status: 409 })
) {}

/** A write refused because a storage-root handoff holds the storage-write fence; retry when it ends. */
export class StorageFenced extends Schema.TaggedError<StorageFenced>()(
  "StorageFenced",
  {
    code: Schema.Literal("STORAGE_FENCED"),
    key: Schema.String,
    holder: Schema.String,
    detail: Schema.String
  },
  HttpApiSchema.annotations({ status: 503 })
) {}
