import { Schema } from "effect"

/** The control plane's credential: a vault token as `Authorization: Bearer <token>` (docs/control-plane.md). */
export const Bearer = Schema.Struct({ authorization: Schema.optional(Schema.String) })
