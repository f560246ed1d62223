/**
 * The source text of each number member of a JSON object's top level (`{"amount": 0.1000000005}` →
 * `amount` → `"0.1000000005"`). `JSON.parse` turns numbers into doubles, which cannot hold every decimal a
 * client sends; money is converted from this text instead. Assumes `text` is valid JSON (it was parsed
 * already); anything else answers an empty map.
 */
export const jsonNumberTexts = (text: string): ReadonlyMap<string, string> => {
  const found = new Map<string, string>()
  let i = 0
  const space = () => {
    while (i < text.length && " \t\r\n".includes(text[i]!)) i++
  }
  const string = (): string => {
    const start = i
    i++ // opening quote
    while (i < text.length && text[i] !== '"') i += text[i] === "\\" ? 2 : 1
    i++ // closing quote
    return JSON.parse(text.slice(start, i)) as string
  }
  const skip = (): void => {
    space()
    const c = text[i]
    if (c === '"') {
      string()
      return
    }
    if (c === "{" || c === "[") {
      let depth = 0
      while (i < text.length) {
        const d = text[i]
        if (d === '"') {
          string()
          continue
        }
        if (d === "{" || d === "[") depth++
        if (d === "}" || d === "]") depth--
        i++
        if (depth === 0) return
      }
      return
    }
    while (i < text.length && !",}] \t\r\n".includes(text[i]!)) i++
  }
  try {
    space()
    if (text[i] !== "{") return found
    i++
    for (;;) {
      space()
      if (text[i] === "}" || i >= text.length) return found
      const key = string()
      space()
      i++ // colon
      space()
      const start = i
      const c = text[i]
      skip()
      if (c !== undefined && (c === "-" || (c >= "0" && c <= "9"))) found.set(key, text.slice(start, i))
      space()
      if (text[i] === ",") i++
    }
  } catch {
    return new Map()
  }
}

/**
 * A JSON number as the body wrote it: the double `JSON.parse` made of it and its own decimal text. What a
 * money member (`amount`, a trade's guard) decodes to when the server read the body with `parseJsonExact`, so
 * the text travels through the contract's `AmountInput` to the order. Sent by a client, it is its double.
 */
export class JsonNumber {
  constructor(
    readonly value: number,
    readonly text: string
  ) {}
  toJSON() {
    return this.value
  }
}

/**
 * `JSON.parse(text)`, with each of the top-level object's members named in `fields` that is a number kept as a
 * `JsonNumber` (its double and its text). Throws as `JSON.parse` does on what is not JSON.
 */
export const parseJsonExact = (text: string, fields: ReadonlyArray<string>): unknown => {
  const value: unknown = JSON.parse(text)
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value
  const members = value as Record<string, unknown>
  let texts: ReadonlyMap<string, string> | undefined
  for (const field of fields) {
    const member = members[field]
    if (typeof member !== "number" || !Object.hasOwn(members, field)) continue
    texts ??= jsonNumberTexts(text)
    const source = texts.get(field)
    if (source !== undefined) members[field] = new JsonNumber(member, source)
  }
  return value
}
