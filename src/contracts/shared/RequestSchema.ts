import { Schema } from "effect"
import type { ParseOptions } from "effect/SchemaAST"
import { hasUndisplayableCharacter, UNDISPLAYABLE_RULE } from "./Text.js"

/** `Schema.Struct`, decoding with `parseOptions` (the options reach nested schemas). */
const structWith = (parseOptions: ParseOptions) =>
  ((...args: Parameters<typeof Schema.Struct>) =>
    Schema.Struct(...args).annotations({ parseOptions })) as typeof Schema.Struct

/**
 * A request's struct (body, query), decoded with every issue collected instead of the first, so a
 * `VALIDATION_FAILED` answer lists every invalid field (docs/errors.md).
 */
export const RequestStruct = structWith({ errors: "all" })

/**
 * A body where an unknown member is refused (400 naming it) instead of ignored: for requests where a misspelt
 * optional field would silently drop a guard the client meant to set (a trade's slippage minimum).
 */
export const StrictRequestStruct = structWith({ errors: "all", onExcessProperty: "error" })

/**
 * A decimal integer written in a query, path or header parameter: digits, an optional sign. What
 * `NumberFromString` alone would also read as a number — `0x2`, `1e1`, ` 1`, `1.0`, `Infinity` — is refused
 * (400 VALIDATION_FAILED), not reinterpreted.
 */
export const DecimalIntegerString = Schema.String.pipe(
  // At most 15 digits: every such integer is exact as a number.
  Schema.pattern(/^[+-]?[0-9]{1,15}$/, { message: () => "must be a decimal integer" })
)

/** A parameter's decimal integer as a number (refine it further with `Schema.int()`, bounds, …). */
export const IntegerFromString = Schema.compose(DecimalIntegerString, Schema.NumberFromString)

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/**
 * Text of `min` to `max` characters as people count them — Unicode code points, so an emoji is one — that is
 * well-formed: a lone surrogate (`"\ud800"` in JSON) has no UTF-8 form and would be stored as U+FFFD, a change
 * the sender never sees, so it is refused.
 */
export const UnicodeText = (min: number, max: number) =>
  Schema.String.pipe(
    Schema.filter((text) => {
      if (LONE_SURROGATE.test(text)) return false
      let length = 0
      for (const _ of text) if (++length > max) return false
      return length >= min
    }),
    Schema.annotations({ message: () => `must be ${min} to ${max} characters of well-formed Unicode` })
  )

/**
 * `UnicodeText` that others will read (a chat message): it also refuses the characters that would act on a reader's
 * terminal or reorder what they see (`UNDISPLAYABLE`, docs/marketplace.md "Chat"), with its own message.
 */
export const DisplayText = (min: number, max: number) =>
  UnicodeText(min, max).pipe(Schema.filter((text) => !hasUndisplayableCharacter(text) || UNDISPLAYABLE_RULE))
