import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

/** Another tick holds the fleet-wide `autonomy:tick` lease: try again when it ends. */
export class TickInProgress extends Schema.TaggedError<TickInProgress>()(
  "TickInProgress",
  { code: Schema.Literal("TICK_IN_PROGRESS"), holder: Schema.String, detail: Schema.String },
  HttpApiSchema.annotations({ status: 409 })
) {}
