import { Schema } from "effect"

/** `/ask` on the wire: an answer and its citations. */

export const Citation = Schema.Struct({
  repo: Schema.String,
  path: Schema.String,
  commit: Schema.String,
  line: Schema.Int,
  end_line: Schema.Int,
  snippet: Schema.String,
  /**
   * Whether the passage supports the answer: true for every citation of an answer; false for the
   * passages a "not covered" answer examined and found not to answer the question.
   */
  supports: Schema.Boolean
})

export type Citation = typeof Citation.Type

export class AskAnswer extends Schema.Class<AskAnswer>("AskAnswer")({
  mode: Schema.Literal("generated", "extractive"),
  answer: Schema.NullOr(Schema.String),
  missing: Schema.Boolean,
  citations: Schema.Array(Citation)
}) {}
