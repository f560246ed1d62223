import { Effect } from "effect"
import { VaultInvalid } from "../../../contracts/vault/Errors.js"

const invalid = (detail: string) => new VaultInvalid({ code: "VAULT_INVALID", detail })

const fromJson = (text: string) =>
  Effect.gen(function* () {
    const raw = yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      // The parser's message quotes part of the text, which is a secret: say only what is wrong.
      catch: () => invalid("stdin starts with { but is not valid JSON")
    })
    if (typeof raw !== "object" || raw === null || Array.isArray(raw))
      return yield* invalid("stdin must be one JSON object of field names to string values")
    const fields: Record<string, string> = {}
    for (const [name, value] of Object.entries(raw)) {
      if (typeof value !== "string") return yield* invalid(`field ${name} must be a string`)
      fields[name] = value
    }
    return fields
  })

const fromLines = (text: string) =>
  Effect.gen(function* () {
    const fields: Record<string, string> = {}
    const lines = text.split(/\r?\n/)
    for (const [index, line] of lines.entries()) {
      if (line.trim() === "") continue
      const eq = line.indexOf("=")
      if (eq <= 0)
        return yield* invalid(
          `line ${index + 1} of stdin is not name=value (a multi-line value, such as a key, goes alone on stdin with --field NAME)`
        )
      const name = line.slice(0, eq).trim()
      if (Object.hasOwn(fields, name)) return yield* invalid(`field ${name} is given twice (line ${index + 1})`)
      fields[name] = line.slice(eq + 1)
    }
    return fields
  })

/**
 * The fields `ctl vault item put` reads from stdin, which carries secrets: no refusal ever quotes it.
 *
 * - with `field`: stdin, verbatim (newlines included), is that one field's value — for multi-line
 *   values such as private keys;
 * - stdin starting with `{`: a JSON object of field names to string values;
 * - otherwise `name=value` lines, one field per line (the value is everything after the first `=`).
 */
export const parseItemInput = (text: string, field?: string) =>
  Effect.gen(function* () {
    if (field !== undefined) {
      if (text.length === 0) return yield* invalid(`stdin is empty: it should hold the value of ${field}`)
      return { [field]: text } as Record<string, string>
    }
    if (text.trim() === "") return yield* invalid("stdin is empty: it should hold the item's fields")
    return text.trimStart().startsWith("{") ? yield* fromJson(text) : yield* fromLines(text)
  })
