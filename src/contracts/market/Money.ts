import { Schema } from "effect"
import { JsonNumber } from "./JsonNumbers.js"

/**
 * Money on the wire (docs/marketplace.md, "Money is exact"): what a request may write an amount as, and the
 * exact decimal text an answer carries beside each amount's number. The conversion to nano-units is the
 * service's (`services/market/Units.ts`).
 */

/**
 * The most characters an amount may be written in (a JSON number's text or a decimal string): checked before
 * any digit is converted, so a million-digit amount costs nothing. 64 holds every amount the API admits with
 * its 9 decimals and room for digits past them (which are rounded).
 */
export const MAX_AMOUNT_TEXT = 64
export const AMOUNT_TOO_LONG = `must be written in at most ${MAX_AMOUNT_TEXT} characters`

/** What a decimal string in a request may be: the text of a JSON number, in quotes (RFC 8259 §6). */
export const JSON_NUMBER_TEXT = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/

/**
 * An exact decimal as a response field (the `_str` sibling of an amount): text, so no JSON reader turns it into
 * a double. Declared in the OpenAPI with its grammar.
 */
export const ExactDecimal = (description: string) =>
  Schema.String.annotations({
    description,
    jsonSchema: {
      type: "string",
      pattern: "^-?(0|[1-9][0-9]*)(\\.[0-9]*[1-9])?$",
      description,
      examples: ["123456789.123456789", "2.5", "0"]
    }
  })

/** A JSON number that kept its decimal text (`parseJsonExact`), as a schema of itself. */
const JsonNumberFromSelf = Schema.declare((input: unknown): input is JsonNumber => input instanceof JsonNumber)

/** A decoded amount: a decimal string (its own text), or a JSON number, with its decimal text when the body's was kept. */
export type DecimalInput = number | string | JsonNumber

/** A decoded amount's decimal text as written, when it was a JSON number whose text the server kept. */
export const numberTextOf = (input: DecimalInput | undefined) => (input instanceof JsonNumber ? input.text : undefined)

/** A decoded amount as a number or a decimal string (a kept JSON number's double). */
export const decimalValueOf = <A extends DecimalInput | undefined>(input: A) =>
  (input instanceof JsonNumber ? input.value : input) as Exclude<A, JsonNumber>

/**
 * An amount as a client writes it: a JSON number, or the same text as a decimal string (`"123456789.123456789"`,
 * what a client whose numbers are doubles sends to be exact), from more than 0 (or 0) to `max`. The server reads
 * a trade's body with `parseJsonExact`, so a number arrives with its decimal text (a `JsonNumber`) and the money
 * is converted from that text, never from the double. A string is at most `MAX_AMOUNT_TEXT` characters; a
 * number's text is held to the same length after the wallet rule (`Trades.place`), as it always was.
 */
export const AmountInput = (least: "positive" | "zero", max: number, description: string) => {
  const range = `${least === "positive" ? "more than 0" : "at least 0"} and at most ${max === 1e12 ? "1e12" : "1e18"}`
  const message = `must be a number or a decimal string, ${range}`
  const inRange = (n: number) => Number.isFinite(n) && (least === "positive" ? n > 0 : n >= 0) && n <= max
  return Schema.Union(Schema.Number, Schema.String, JsonNumberFromSelf).pipe(
    Schema.annotations({ message: () => ({ message, override: true }) }),
    // The length first: a million-digit string is refused before any pattern or conversion reads it.
    Schema.filter((value) => {
      if (typeof value === "number") return inRange(value) || message
      if (value instanceof JsonNumber) return inRange(value.value) || message
      if (value.length > MAX_AMOUNT_TEXT) return AMOUNT_TOO_LONG
      return (JSON_NUMBER_TEXT.test(value) && inRange(Number(value))) || message
    }),
    Schema.annotations({
      jsonSchema: {
        description,
        anyOf: [
          {
            type: "number",
            ...(least === "positive" ? { exclusiveMinimum: 0 } : { minimum: 0 }),
            maximum: max,
            description: `At most ${MAX_AMOUNT_TEXT} characters as written in the body`
          },
          {
            type: "string",
            pattern: JSON_NUMBER_TEXT.source,
            maxLength: MAX_AMOUNT_TEXT,
            description: "The amount's decimal text, exactly: the same text as the number, in quotes"
          }
        ]
      }
    })
  )
}
