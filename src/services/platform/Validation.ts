import { ParseResult, Schema } from "effect"

/** A non-empty string of at most `max` characters. */
export const BoundedText = (max: number) => Schema.String.pipe(Schema.minLength(1), Schema.maxLength(max))

/**
 * A decode failure as one line: `path.to.field: message; …`, the first `limit` issues. Every refusal
 * of input (registries, front matter, batches, events) names its fields the same way.
 */
export const formatIssues = (
  error: ParseResult.ParseError,
  options: { readonly limit?: number; readonly root?: string; readonly prefix?: string } = {}
) =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    .slice(0, options.limit ?? Number.POSITIVE_INFINITY)
    .map(
      (issue) =>
        `${options.prefix ?? ""}${issue.path.length === 0 ? (options.root ?? "(root)") : issue.path.join(".")}: ${issue.message}`
    )
    .join("; ")
