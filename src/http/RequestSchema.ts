import { Schema } from "effect"

/**
 * A request's struct (body, query), decoded with every issue collected instead of the first, so a
 * `VALIDATION_FAILED` answer lists every invalid field (docs/errors.md). The option reaches nested schemas.
 */
export const RequestStruct = ((...args: Parameters<typeof Schema.Struct>) =>
  Schema.Struct(...args).annotations({ parseOptions: { errors: "all" } })) as typeof Schema.Struct

/**
 * A body where an unknown member is refused (400 naming it) instead of ignored: for requests where a misspelt
 * optional field would silently drop a guard the client meant to set (a trade's slippage minimum).
 */
export const StrictRequestStruct = ((...args: Parameters<typeof Schema.Struct>) =>
  Schema.Struct(...args).annotations({
    parseOptions: { errors: "all", onExcessProperty: "error" }
  })) as typeof Schema.Struct
