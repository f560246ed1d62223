import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

/** The readout's contract (docs/analytics.md, "Readout"): wire schemas and typed errors, no runtime code. */

export class ExperimentNotFound extends Schema.TaggedError<ExperimentNotFound>()(
  "ExperimentNotFound",
  { code: Schema.Literal("EXPERIMENT_NOT_FOUND"), experiment_id: Schema.String, detail: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}

/** Bad readout input: a date that does not parse, from after to, an unknown metric, a bad interval. */
export class ReadoutQueryInvalid extends Schema.TaggedError<ReadoutQueryInvalid>()(
  "ReadoutQueryInvalid",
  {
    code: Schema.Literal("INVALID_DATE", "INVALID_RANGE", "UNKNOWN_METRIC", "INVALID_INTERVAL", "INVALID_LIMIT"),
    detail: Schema.String
  },
  HttpApiSchema.annotations({ status: 400 })
) {}

/** The readout needs an admin token (KEEL_ADMIN_TOKENS). */
export class AdminUnauthorized extends Schema.TaggedError<AdminUnauthorized>()(
  "AdminUnauthorized",
  {
    code: Schema.Literal("ADMIN_TOKEN_REQUIRED", "ADMIN_TOKEN_INVALID", "ADMIN_TOKENS_NOT_CONFIGURED"),
    detail: Schema.String
  },
  HttpApiSchema.annotations({ status: 401 })
) {}

export const ReadoutInterval = Schema.Literal("day", "hour")
export type ReadoutInterval = typeof ReadoutInterval.Type

const Rate = Schema.Number.annotations({ description: "a proportion in [0, 1]" })
const Interval95 = Schema.NullOr(Schema.Struct({ low: Rate, high: Rate })).annotations({
  description: "95 % Wilson score interval of the conversion rate; null without subjects"
})

export class VariantResult extends Schema.Class<VariantResult>("VariantResult")({
  name: Schema.String,
  weight: Schema.Number.annotations({ description: "configured traffic weight (share of the experiment)" }),
  is_control: Schema.Boolean,
  exposures: Schema.Int.annotations({ description: "assignments served to these subjects (all their exposures)" }),
  subjects: Schema.Int.annotations({ description: "unique subjects first exposed in [from, to)" }),
  conversions: Schema.Int.annotations({ description: "subjects with a metric event at or after first exposure" }),
  conversion_rate: Schema.NullOr(Rate),
  conversion_rate_ci: Interval95,
  lift: Schema.NullOr(Schema.Number).annotations({
    description:
      "relative lift vs control, (rate − control rate) / control rate; null for control or a zero control rate"
  }),
  z: Schema.NullOr(Schema.Number).annotations({ description: "two-proportion z statistic (pooled) vs control" }),
  p_value: Schema.NullOr(Schema.Number).annotations({ description: "two-sided p-value of the z-test" }),
  probability_to_beat_control: Schema.NullOr(Rate).annotations({
    description: "P(rate > control rate) under Beta(1 + conversions, 1 + subjects − conversions) posteriors"
  })
}) {}

export class SampleRatioCheck extends Schema.Class<SampleRatioCheck>("SampleRatioCheck")({
  chi_square: Schema.Number,
  df: Schema.Int,
  p_value: Schema.Number,
  mismatch: Schema.Boolean.annotations({ description: "p_value < 0.001" })
}) {}

export class ExperimentResults extends Schema.Class<ExperimentResults>("ExperimentResults")({
  experiment_id: Schema.String,
  metric: Schema.String,
  from: Schema.String,
  to: Schema.String,
  control: Schema.String,
  variants: Schema.Array(VariantResult),
  srm: Schema.NullOr(SampleRatioCheck),
  unlisted_subjects: Schema.Int.annotations({
    description: "subjects holding a variant the registry no longer lists (left out of every figure)"
  })
}) {}

export class SummaryBucket extends Schema.Class<SummaryBucket>("SummaryBucket")({
  start: Schema.String,
  visitors: Schema.Int,
  pageviews: Schema.Int,
  events: Schema.Int
}) {}

export class AnalyticsSummary extends Schema.Class<AnalyticsSummary>("AnalyticsSummary")({
  site: Schema.String,
  from: Schema.String,
  to: Schema.String,
  interval: ReadoutInterval,
  totals: Schema.Struct({ visitors: Schema.Int, pageviews: Schema.Int, events: Schema.Int }),
  series: Schema.Array(SummaryBucket),
  top_pages: Schema.Array(Schema.Struct({ page: Schema.String, pageviews: Schema.Int, visitors: Schema.Int })),
  top_referrers: Schema.Array(Schema.Struct({ referrer: Schema.String, visitors: Schema.Int, pageviews: Schema.Int })),
  top_utm_sources: Schema.Array(
    Schema.Struct({ utm_source: Schema.String, visitors: Schema.Int, pageviews: Schema.Int })
  )
}) {}
