import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

/** The public blog on the wire: a page of post summaries, one post with its HTML, and the one refusal. */

export class BlogPostSummary extends Schema.Class<BlogPostSummary>("BlogPostSummary")({
  slug: Schema.String,
  title: Schema.String,
  excerpt: Schema.String,
  cover_image: Schema.NullOr(Schema.String),
  tags: Schema.Array(Schema.String),
  published_at: Schema.String,
  updated_at: Schema.String,
  reading_time_minutes: Schema.Int
}) {}

export const Pagination = Schema.Struct({
  page: Schema.Int,
  limit: Schema.Int,
  pages: Schema.Int,
  total: Schema.Int,
  next: Schema.NullOr(Schema.Int),
  prev: Schema.NullOr(Schema.Int)
})

export class BlogList extends Schema.Class<BlogList>("BlogList")({
  posts: Schema.Array(BlogPostSummary),
  meta: Schema.Struct({ pagination: Pagination })
}) {}

export class BlogPost extends Schema.Class<BlogPost>("BlogPost")({
  post: Schema.Struct({ ...BlogPostSummary.fields, html: Schema.String })
}) {}

export class PostNotFound extends Schema.TaggedError<PostNotFound>()(
  "PostNotFound",
  { detail: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}
