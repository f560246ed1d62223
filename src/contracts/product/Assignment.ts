import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

/** Sticky experiment assignment on the wire: the answer of /experiments/assign and its refusals. */

export class Assignment extends Schema.Class<Assignment>("Assignment")({
  variant: Schema.NullOr(Schema.String),
  config: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  experimentId: Schema.NullOr(Schema.String)
}) {}

export class AppNotFound extends Schema.TaggedError<AppNotFound>()(
  "AppNotFound",
  { app_id: Schema.String, detail: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}

export const CLIENT_KEY_HEADER = "X-Client-Key"

export class InvalidClientKey extends Schema.TaggedError<InvalidClientKey>()(
  "InvalidClientKey",
  {
    detail: Schema.String,
    /** The request header that carries the key. */
    header: Schema.optional(Schema.Literal(CLIENT_KEY_HEADER)),
    /** `missing`: no key (or an empty one) was sent; `unknown`: the key is not one of the app's. */
    reason: Schema.optional(Schema.Literal("missing", "unknown"))
  },
  HttpApiSchema.annotations({ status: 401 })
) {}
