import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

export class ObjectNotFound extends Schema.TaggedError<ObjectNotFound>()(
  "ObjectNotFound",
  { code: Schema.Literal("OBJECT_NOT_FOUND"), key: Schema.String, detail: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}

/** `If-None-Match: *` on an existing key, or `If-Match` with another digest (or on an absent key). */
export class PreconditionFailed extends Schema.TaggedError<PreconditionFailed>()(
  "PreconditionFailed",
  {
    code: Schema.Literal("PRECONDITION_FAILED"),
    key: Schema.String,
    /** The object's SHA-256 now; null when it does not exist. */
    current_sha256: Schema.NullOr(Schema.String),
    detail: Schema.String
  },
  HttpApiSchema.annotations({ status: 412 })
) {}

/** An object's head as the object API answers it. */
export const ObjectHeadAnswer = Schema.Struct({
  key: Schema.String,
  size: Schema.Int,
  sha256: Schema.String.annotations({ description: "Lowercase hex SHA-256 of the bytes (also the ETag)" }),
  modified_at: Schema.String
})

/** A listing page: heads in key order and the cursor of the next page (null on the last). */
export const ObjectListAnswer = Schema.Struct({
  objects: Schema.Array(ObjectHeadAnswer),
  next_cursor: Schema.NullOr(Schema.String)
})
