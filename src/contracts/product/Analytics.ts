import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { BoundedText as Text } from "../shared/Text.js"

/**
 * The analytics collectors on the wire: the batch envelope (each event is decoded one by one by the Collector, so
 * the contract types them as unknown), the answer and the refusals.
 */

export const MAX_EVENTS_PER_BATCH = 500

/** The envelope: events are checked one by one, so one bad event does not sink its batch. */
export const CollectBatch = Schema.Struct({
  site_id: Text(128),
  events: Schema.Array(Schema.Unknown).pipe(Schema.maxItems(MAX_EVENTS_PER_BATCH))
})

export class CollectResult extends Schema.Class<CollectResult>("CollectResult")({
  accepted: Schema.Int,
  duplicates: Schema.Int,
  rejected: Schema.Array(Schema.Struct({ index: Schema.Int, reason: Schema.String }))
}) {}

export class SiteNotAllowed extends Schema.TaggedError<SiteNotAllowed>()(
  "SiteNotAllowed",
  { site_id: Schema.String, detail: Schema.String },
  HttpApiSchema.annotations({ status: 403 })
) {}

export class MalformedBatch extends Schema.TaggedError<MalformedBatch>()(
  "MalformedBatch",
  { code: Schema.Literal("INVALID_JSON", "MALFORMED_BATCH"), detail: Schema.String },
  HttpApiSchema.annotations({ status: 400 })
) {}
