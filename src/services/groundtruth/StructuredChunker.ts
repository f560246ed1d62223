/**
 * JSON, YAML and TOML cut by structure: one chunk per top-level key (its comments above it included),
 * the key path as its heading; a key longer than the window limit is cut at its own keys, and only a
 * long leaf is windowed. A file that does not scan as its format falls back to plain windows.
 */

/** A key's lines: [start, end) 0-based, and its own keys. */
export interface OutlineNode {
  readonly key: string
  readonly start: number
  readonly end: number
  readonly children: ReadonlyArray<OutlineNode>
}

const trimEnd = (lines: ReadonlyArray<string>, start: number, end: number) => {
  let e = end
  while (e > start + 1 && (lines[e - 1] ?? "").trim() === "") e--
  return e
}

const indentOf = (line: string) => line.length - line.trimStart().length

/**
 * A node starts at the comment lines directly above its key. With `byIndent` (YAML), only comments indented no
 * deeper than the key: a deeper `# …` line is the end of the previous key's block scalar, not a comment.
 */
const withComments = (
  lines: ReadonlyArray<string>,
  keyLine: number,
  floor: number,
  comment: RegExp,
  byIndent = false
) => {
  const keyIndent = indentOf(lines[keyLine] ?? "")
  let s = keyLine
  while (s - 1 >= floor && comment.test(lines[s - 1] ?? "") && (!byIndent || indentOf(lines[s - 1] ?? "") <= keyIndent))
    s--
  return s
}

/** A key as found on its line. */
interface KeyLine {
  readonly line: number
  readonly key: string
}

/**
 * Each key's lines within [from, to): from the comment lines directly above it to where the next key's
 * comments begin, trailing blank lines trimmed.
 */
const keySpans = (
  lines: ReadonlyArray<string>,
  keys: ReadonlyArray<KeyLine>,
  from: number,
  to: number,
  comment: RegExp,
  byIndent = false
) =>
  keys.map((k, j) => {
    const start = withComments(lines, k.line, j === 0 ? from : keys[j - 1]!.line + 1, comment, byIndent)
    const next = keys[j + 1]
    const rawEnd = next === undefined ? to : withComments(lines, next.line, k.line + 1, comment, byIndent)
    return { ...k, start, end: trimEnd(lines, start, rawEnd) }
  })

/** YAML and TOML comments. */
const HASH_COMMENT = /^\s*#/

// ---------------------------------------------------------------- YAML (indentation outline)

const YAML_KEY = /^(\s*)(?:-\s+)?("[^"]*"|'[^']*'|[^\s#"'][^:#]*?)\s*:(?:\s|$)/

const yamlNodes = (lines: ReadonlyArray<string>, from: number, to: number, indent: number): Array<OutlineNode> => {
  const keys: Array<KeyLine> = []
  for (let i = from; i < to; i++) {
    const line = lines[i] ?? ""
    if (line.trim() === "" || HASH_COMMENT.test(line)) continue
    if (indentOf(line) !== indent || line.trimStart().startsWith("- ")) continue
    const match = YAML_KEY.exec(line)
    if (match !== null) keys.push({ line: i, key: (match[2] ?? "").replace(/^["']|["']$/g, "") })
  }
  return keySpans(lines, keys, from, to, HASH_COMMENT, true).map(({ key, line: keyLine, start, end }) => {
    let childIndent = -1
    for (let i = keyLine + 1; i < end; i++) {
      const line = lines[i] ?? ""
      if (line.trim() === "" || HASH_COMMENT.test(line)) continue
      childIndent = indentOf(line)
      break
    }
    return { key, start, end, children: childIndent > indent ? yamlNodes(lines, keyLine + 1, end, childIndent) : [] }
  })
}

export const outlineYaml = (lines: ReadonlyArray<string>): Array<OutlineNode> | undefined => {
  const nodes = yamlNodes(lines, 0, lines.length, 0)
  return nodes.length === 0 ? undefined : nodes
}

// ---------------------------------------------------------------- TOML (tables and keys)

const TOML_TABLE = /^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$/
const TOML_KEY = /^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_.-]+(?:\s*\.\s*[A-Za-z0-9_-]+)*)\s*=/

const tomlKeys = (lines: ReadonlyArray<string>, from: number, to: number): Array<OutlineNode> => {
  const keys: Array<KeyLine> = []
  let open = 0
  for (let i = from; i < to; i++) {
    const line = lines[i] ?? ""
    if (open === 0) {
      const match = TOML_KEY.exec(line)
      if (match !== null) keys.push({ line: i, key: (match[1] ?? "").replace(/^["']|["']$/g, "") })
    }
    // Multi-line arrays and inline tables: a key inside them is not a key of the table.
    const code = line.replace(/"(?:[^"\\]|\\.)*"|'[^']*'|#.*$/g, "")
    open = Math.max(0, open + (code.match(/[[{]/g)?.length ?? 0) - (code.match(/[\]}]/g)?.length ?? 0))
  }
  return keySpans(lines, keys, from, to, HASH_COMMENT).map(({ key, start, end }) => ({ key, start, end, children: [] }))
}

export const outlineToml = (lines: ReadonlyArray<string>): Array<OutlineNode> | undefined => {
  const tables: Array<KeyLine> = []
  lines.forEach((line, i) => {
    const match = TOML_TABLE.exec(line)
    if (match !== null && !TOML_KEY.test(line)) tables.push({ line: i, key: match[1] ?? "" })
  })
  const tableSpans = keySpans(lines, tables, 0, lines.length, HASH_COMMENT)
  // The root keys end where the first table's own comments begin (those belong to the table).
  const firstTable = tableSpans[0]?.start ?? lines.length
  const nodes: Array<OutlineNode> = tomlKeys(lines, 0, firstTable).filter((n) => n.start < firstTable)
  for (const t of tableSpans) {
    nodes.push({ key: t.key, start: t.start, end: t.end, children: tomlKeys(lines, t.line + 1, t.end) })
  }
  return nodes.length === 0 ? undefined : nodes
}

// ---------------------------------------------------------------- JSON (a scanner that keeps lines)

/**
 * The members of the root object with their lines, and of nested objects. JSONC comments and trailing
 * commas (tsconfig, VS Code settings) are tolerated; anything else unexpected means "not JSON".
 */
export const outlineJson = (text: string): Array<OutlineNode> | undefined => {
  let pos = 0
  let line = 0
  const fail = (): never => {
    throw new Error("not json")
  }
  const skip = () => {
    for (;;) {
      const c = text[pos]
      if (c === "\n") {
        line++
        pos++
      } else if (c === " " || c === "\t" || c === "\r") pos++
      else if (c === "/" && text[pos + 1] === "/") {
        while (pos < text.length && text[pos] !== "\n") pos++
      } else if (c === "/" && text[pos + 1] === "*") {
        const close = text.indexOf("*/", pos + 2)
        if (close < 0) fail()
        for (let i = pos; i < close; i++) if (text[i] === "\n") line++
        pos = close + 2
      } else return
    }
  }
  const string = () => {
    if (text[pos] !== '"') fail()
    const begin = ++pos
    while (pos < text.length && text[pos] !== '"') {
      if (text[pos] === "\\") pos++
      else if (text[pos] === "\n") fail()
      pos++
    }
    if (pos >= text.length) fail()
    return text.slice(begin, pos++)
  }
  const value = (): Array<OutlineNode> => {
    skip()
    const c = text[pos]
    if (c === "{") return object()
    if (c === "[") {
      pos++
      skip()
      while (text[pos] !== "]") {
        value()
        skip()
        if (text[pos] === ",") {
          pos++
          skip()
        } else if (text[pos] !== "]") fail()
      }
      pos++
      return []
    }
    if (c === '"') {
      string()
      return []
    }
    const literal = /^(?:-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)/.exec(text.slice(pos, pos + 64))
    if (literal === null) fail()
    pos += literal![0].length
    return []
  }
  const object = (): Array<OutlineNode> => {
    pos++
    const members: Array<OutlineNode> = []
    skip()
    while (text[pos] !== "}") {
      const start = line
      const key = string()
      skip()
      if (text[pos] !== ":") fail()
      pos++
      const children = value()
      members.push({ key, start, end: line + 1, children })
      skip()
      if (text[pos] === ",") {
        pos++
        skip()
      } else if (text[pos] !== "}") fail()
    }
    pos++
    return members
  }
  try {
    skip()
    if (text[pos] !== "{") return undefined
    const members = object()
    skip()
    if (pos < text.length || members.length === 0) return undefined
    // A JSONC comment directly above a member belongs to it, as in YAML and TOML.
    const lines = text.split(/\r?\n/)
    const attach = (list: ReadonlyArray<OutlineNode>, floor: number): Array<OutlineNode> =>
      list.map((node, i) => ({
        ...node,
        start: withComments(lines, node.start, i === 0 ? floor : list[i - 1]!.end, JSON_COMMENT),
        children: attach(node.children, node.start + 1)
      }))
    return attach(members, 0)
  } catch {
    return undefined
  }
}

const JSON_COMMENT = /^\s*(\/\/|\/\*|\*)/

export type StructuredKind = "json" | "yaml" | "toml"

export const structuredKind = (file: string): StructuredKind | undefined => {
  if (/\.(json|jsonc|json5)$/i.test(file) || /(^|\/)\.(babelrc|eslintrc|prettierrc)$/.test(file)) return "json"
  if (/\.(ya?ml)$/i.test(file)) return "yaml"
  if (/\.toml$/i.test(file)) return "toml"
  return undefined
}
