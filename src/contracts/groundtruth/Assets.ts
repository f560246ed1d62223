import { Schema } from "effect"

/** A brand asset as listed by `/assets` (its bytes are served by the content route). */

export const AssetRecord = Schema.Struct({
  product: Schema.String,
  kind: Schema.String,
  index: Schema.Int,
  repo: Schema.String,
  path: Schema.String,
  ref: Schema.String,
  commit: Schema.NullOr(Schema.String),
  visibility: Schema.String,
  variant: Schema.NullOr(Schema.String),
  format: Schema.NullOr(Schema.String),
  blobUrl: Schema.NullOr(Schema.String),
  contentUrl: Schema.optional(Schema.String)
})

export type AssetRecord = typeof AssetRecord.Type
