import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

/** The token's grant carries the action, but the registry does not list the grant's consumer under it. */
export class ActionNotHeld extends Schema.TaggedError<ActionNotHeld>()(
  "ActionNotHeld",
  {
    code: Schema.Literal("ACTION_NOT_HELD"),
    action: Schema.String,
    consumer: Schema.String,
    detail: Schema.String
  },
  HttpApiSchema.annotations({ status: 403 })
) {}

/** Neither the registry nor its last valid snapshot could be read: nobody can be authorized (fail closed). */
export class AuthorityUnavailable extends Schema.TaggedError<AuthorityUnavailable>()(
  "AuthorityUnavailable",
  { code: Schema.Literal("REGISTRY_UNAVAILABLE"), detail: Schema.String },
  HttpApiSchema.annotations({ status: 503 })
) {}
