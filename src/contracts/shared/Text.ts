import { Schema } from "effect"

/** What a text on the wire may hold: rules both a contract's schema and the services that check text apply. */

/** Whether `text` holds a C0 control character (NUL, a line break, a tab, ESC…) or DEL. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
export const hasControlCharacter = (text: string) => /[\u0000-\u001f\u007f]/.test(text)

/**
 * What text shown to other people (chat) may not hold: C0 controls but line feed and tab (NUL, ESC and its ANSI
 * sequences, CR, BEL…), DEL, C1 controls (U+0080–U+009F, among them CSI), and the bidirectional embeddings,
 * overrides (U+202A–U+202E) and isolates (U+2066–U+2069) that reorder what a reader sees ("Trojan Source",
 * CVE-2021-42574; the set rustc and GitHub flag). The implicit marks (U+200E, U+200F, U+061C) stay: right-to-left
 * text needs them and they reorder nothing past themselves.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
export const UNDISPLAYABLE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/

export const UNDISPLAYABLE_RULE =
  "must not contain control characters (line feed and tab excepted) or bidirectional controls (U+202A–U+202E, U+2066–U+2069)"

/** Whether `text` holds a character no displayed text may hold (`UNDISPLAYABLE`). */
export const hasUndisplayableCharacter = (text: string) => UNDISPLAYABLE.test(text)

/** A non-empty string of at most `max` characters. */
export const BoundedText = (max: number) => Schema.String.pipe(Schema.minLength(1), Schema.maxLength(max))

/**
 * A non-empty string of at most `max` characters counted as Unicode code points (an emoji is one), as JSON
 * Schema's `maxLength` counts them: the published contract says `max`, whatever UTF-16 makes of it.
 */
export const CodePointText = (max: number) =>
  Schema.String.pipe(
    Schema.minLength(1),
    // A code point is one or two UTF-16 units: past 2 × max units no count is needed.
    Schema.filter(
      (text) =>
        text.length <= max ||
        (text.length <= 2 * max && [...text].length <= max) ||
        `expected at most ${max} characters`,
      {
        jsonSchema: { maxLength: max }
      }
    )
  )
