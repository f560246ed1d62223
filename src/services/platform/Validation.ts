import { ParseResult } from "effect"

/** Effect's transformation messages quote their input: `Unable to decode "abc" into a number`. */
const DECODED_VALUE = /Unable to decode (?:"(?:[^"\\]|\\.)*"|[^"]*?) into /g
const withoutDecodedValue = (message: string) => message.replace(DECODED_VALUE, "Unable to decode the value into ")

/**
 * A decode message without the value that failed: Effect's default messages end in `, actual <value>`
 * (`Expected string, actual 123` becomes `Expected string`). For input that may carry a secret.
 */
export const withoutValue = (message: string) => withoutDecodedValue(message).replace(/,\s*actual\b[\s\S]*$/, "")

/**
 * A one-line list of issues (`path: message; path: message`) without the values that failed: each
 * `, actual <value>` is dropped up to the `;` that starts the next issue. Quoted text is skipped whole,
 * so a value that contains `;` does not leave its tail behind.
 */
export const withoutValues = (input: string) => {
  const text = withoutDecodedValue(input)
  const clause = /,\s*actual\b/g
  let out = ""
  let from = 0
  for (let match = clause.exec(text); match !== null; match = clause.exec(text)) {
    out += text.slice(from, match.index)
    let at = match.index + match[0].length
    let quoted = false
    let escaped = false
    for (; at < text.length; at++) {
      const char = text[at]
      if (quoted) {
        if (escaped) escaped = false
        else if (char === "\\") escaped = true
        else if (char === '"') quoted = false
      } else if (char === '"') quoted = true
      else if (char === ";") break
    }
    from = at
    clause.lastIndex = at
  }
  return out + text.slice(from)
}

/**
 * What a value must be, in place of the decoder's rendering of a whole struct, record or array schema
 * (`Expected { readonly user_id: …; … }`), which is a schema dump, not a message (docs/errors.md).
 */
export const plainExpectation = (message: string) =>
  message.startsWith("Expected { ") || message.startsWith("Expected Struct")
    ? "must be an object"
    : message.startsWith("Expected ReadonlyArray<") || message.startsWith("Expected readonly [")
      ? "must be an array"
      : message

/**
 * Drops the noise of optional fields: for `field?: T` a wrong value fails both `T` and `undefined`, and
 * the second ("Expected undefined, actual …") says nothing when another issue names the same field or a
 * field inside it.
 */
export const relevantIssues = <I extends { readonly path: ReadonlyArray<PropertyKey>; readonly message: string }>(
  issues: ReadonlyArray<I>
) =>
  issues.filter((issue) => {
    if (!issue.message.startsWith("Expected undefined")) return true
    const here = issue.path.join(".")
    return !issues.some(
      (other) =>
        other !== issue &&
        !other.message.startsWith("Expected undefined") &&
        (other.path.join(".") === here || other.path.join(".").startsWith(`${here}.`))
    )
  })

/** An issue quoting a long value (a 2 000-character description) says what is wrong in a line, not the value. */
const ISSUE_KEPT = 299 // with the mark, at most 300 characters

/** `text` cut to `max` characters (an ellipsis marks the cut), for echoing input in a message. */
export const shortened = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max)}…`)

/**
 * A decode failure as one line: `path.to.field: message; …`, the first `limit` issues. Every refusal
 * of input (registries, front matter, batches, events) names its fields the same way.
 */
export const formatIssues = (
  error: ParseResult.ParseError,
  options: {
    readonly limit?: number
    readonly root?: string
    readonly prefix?: string
    /** Never quote the offending input (it may be a secret): each issue says what was expected only. */
    readonly withoutValues?: boolean
  } = {}
) =>
  relevantIssues(ParseResult.ArrayFormatter.formatErrorSync(error))
    .slice(0, options.limit ?? Number.POSITIVE_INFINITY)
    .map(
      (issue) =>
        `${options.prefix ?? ""}${issue.path.length === 0 ? (options.root ?? "(root)") : issue.path.join(".")}: ${shortened(plainExpectation(options.withoutValues === true ? withoutValue(issue.message) : issue.message), ISSUE_KEPT)}`
    )
    .join("; ")
