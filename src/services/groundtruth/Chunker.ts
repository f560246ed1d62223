import { configWords } from "./ConfigVocabulary.js"
import { declarations, sourceLanguage } from "./SourceChunker.js"
import { type OutlineNode, outlineJson, outlineToml, outlineYaml, structuredKind } from "./StructuredChunker.js"

/** A piece of a file with its exact 1-based line range. */
export interface Chunk {
  readonly line: number
  readonly endLine: number
  /** Markdown: the heading path ("Install > From npm"); JSON/YAML/TOML: the key path; source: the declaration. */
  readonly heading: string
  readonly content: string
  /** Extra words that find the chunk without being shown in it (config vocabulary, code-block languages). */
  readonly terms: string
}

export interface ChunkOptions {
  readonly maxLines: number
  readonly overlapLines: number
}

/** The file's lines; a final newline ends the last line rather than starting an empty one. */
export const splitLines = (text: string) => {
  const lines = text.split(/\r?\n/)
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop()
  return lines
}

/**
 * Windows of at most `maxLines`, each overlapping the previous by up to `overlapLines`, never cutting
 * an atom (a [start, end) range of `lines`, such as a fenced code block) unless it alone is longer than
 * twice the limit. Windows of blank lines, or of punctuation only, are dropped.
 */
export const chunkWindows = (
  lines: ReadonlyArray<string>,
  firstLine: number,
  heading: string,
  options: ChunkOptions,
  atoms: ReadonlyArray<readonly [number, number]> = [],
  terms: (start: number, end: number) => string = () => ""
): Array<Chunk> => {
  const units: Array<readonly [number, number]> = []
  let at = 0
  for (const [start, end] of atoms) {
    for (; at < start; at++) units.push([at, at + 1])
    if (end - start <= options.maxLines * 2) {
      units.push([start, end])
      at = end
    }
  }
  for (; at < lines.length; at++) units.push([at, at + 1])
  const chunks: Array<Chunk> = []
  let u = 0
  while (u < units.length) {
    let v = u
    while (v + 1 < units.length && units[v + 1]![1] - units[u]![0] <= options.maxLines) v++
    const start = units[u]![0]
    const end = units[v]![1]
    const window = lines.slice(start, end)
    if (window.some((l) => /[\p{L}\p{N}]/u.test(l))) {
      chunks.push({
        line: firstLine + start,
        endLine: firstLine + end - 1,
        heading,
        content: window.join("\n"),
        terms: terms(start, end)
      })
    }
    if (v + 1 >= units.length) break
    // Overlap only with what still fits beside the next unit: a window must reach past the previous one
    // (before a long code block, backing up would emit one-line windows 56-60, 57-60, 58-60…).
    const following = units[v + 1]![1]
    let next = v + 1
    while (
      next - 1 > u &&
      end - units[next - 1]![0] <= options.overlapLines &&
      following - units[next - 1]![0] <= options.maxLines
    )
      next--
    u = next
  }
  return chunks
}

/** Line windows of at most `maxLines`, each overlapping the previous by `overlapLines`. */
export const chunkLines = (lines: ReadonlyArray<string>, firstLine: number, heading: string, options: ChunkOptions) =>
  chunkWindows(lines, firstLine, heading, options)

const HEADING = /^(#{1,6})\s+(.*?)\s*#*\s*$/
const SETEXT_UNDERLINE = /^ {0,3}(=+|-+)\s*$/
const NOT_SETEXT_TEXT = /^\s{0,3}([-*+>|#]|\d+[.)]\s)/

/** A heading as text: links keep their words, not their URLs ("[1.7.0](https://…) (2024-04-28)" → "1.7.0 (2024-04-28)"). */
const headingText = (raw: string) =>
  raw
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/\s+/g, " ")
    .trim()
const FENCE = /^\s{0,3}(```+|~~~+)\s*([\w+#.-]*)/

const LANGUAGE_WORDS: Record<string, string> = {
  js: "javascript",
  mjs: "javascript",
  cjs: "javascript",
  ts: "typescript",
  tsx: "typescript react",
  jsx: "javascript react",
  sh: "shell command line terminal",
  bash: "shell command line terminal",
  shell: "shell command line terminal",
  console: "shell command line terminal",
  py: "python",
  rs: "rust",
  yml: "yaml",
  json: "json",
  toml: "toml"
}

/**
 * Markdown is cut at headings (outside code fences); each section carries its heading path and is
 * windowed further when longer than `maxLines`, never inside a code block. A chunk's hidden terms name
 * the languages of its code blocks. Line numbers are those of the file.
 */
export const chunkMarkdown = (text: string, options: ChunkOptions): Array<Chunk> => {
  const lines = splitLines(text)
  const fences: Array<{ start: number; end: number; language: string }> = []
  const headings: Array<{ line: number; depth: number; title: string }> = []
  let open: { start: number; marker: string; language: string } | undefined
  // YAML front matter is not a setext heading.
  let frontMatterEnd = -1
  if (lines[0]?.trim() === "---") frontMatterEnd = lines.findIndex((l, i) => i > 0 && l.trim() === "---")
  lines.forEach((line, i) => {
    if (i <= frontMatterEnd) return
    const fence = FENCE.exec(line)
    if (open !== undefined) {
      if (fence !== null && (fence[1] ?? "").startsWith(open.marker) && (fence[2] ?? "") === "") {
        fences.push({ start: open.start, end: i + 1, language: open.language })
        open = undefined
      }
      return
    }
    if (fence !== null) {
      open = { start: i, marker: fence[1] ?? "```", language: (fence[2] ?? "").toLowerCase() }
      return
    }
    const match = HEADING.exec(line)
    if (match !== null) {
      headings.push({ line: i, depth: (match[1] ?? "#").length, title: headingText(match[2] ?? "") })
      return
    }
    const underline = SETEXT_UNDERLINE.exec(lines[i + 1] ?? "")
    const previous = i === 0 ? "" : (lines[i - 1] ?? "")
    if (
      underline !== null &&
      line.trim() !== "" &&
      previous.trim() === "" &&
      !NOT_SETEXT_TEXT.test(line) &&
      !FENCE.test(line)
    ) {
      headings.push({ line: i, depth: (underline[1] ?? "=").startsWith("=") ? 1 : 2, title: headingText(line) })
    }
  })
  if (open !== undefined) fences.push({ start: open.start, end: lines.length, language: open.language })
  const chunks: Array<Chunk> = []
  const path: Array<string> = []
  const section = (from: number, to: number) => {
    if (to <= from) return
    const atoms = fences
      .filter((f) => f.start >= from && f.end <= to)
      .map((f) => [f.start - from, f.end - from] as const)
    const terms = (start: number, end: number) =>
      [
        ...new Set(
          fences
            .filter((f) => f.language !== "" && f.start - from < end && f.end - from > start)
            .flatMap((f) => [f.language, LANGUAGE_WORDS[f.language] ?? "", "code example"])
        )
      ]
        .filter((w) => w !== "")
        .join(" ")
    chunks.push(
      ...chunkWindows(lines.slice(from, to), from + 1, path.filter((p) => p).join(" > "), options, atoms, terms)
    )
  }
  let sectionStart = 0
  for (const heading of headings) {
    section(sectionStart, heading.line)
    path.length = Math.min(path.length, heading.depth - 1)
    path[heading.depth - 1] = heading.title
    for (let d = 0; d < heading.depth - 1; d++) path[d] ??= ""
    sectionStart = heading.line
  }
  section(sectionStart, lines.length)
  return chunks
}

/** A structured file: a chunk per key, cut at the keys of a key longer than the limit. */
const chunkOutline = (
  file: string,
  lines: ReadonlyArray<string>,
  nodes: ReadonlyArray<OutlineNode>,
  options: ChunkOptions
) => {
  const chunks: Array<Chunk> = []
  // A chunk's hidden words cover its key path and every key inside it ([package] holds rust-version).
  const inner = (node: OutlineNode): Array<string> => node.children.flatMap((c) => [c.key, ...inner(c)])
  const leaf = (from: number, to: number, keyPath: ReadonlyArray<string>, keys: ReadonlyArray<string> = []) => {
    if (to <= from) return
    chunks.push(
      ...chunkWindows(lines.slice(from, to), from + 1, keyPath.join(" > "), options, [], () =>
        configWords(file, [...keyPath, ...keys])
      )
    )
  }
  const emit = (list: ReadonlyArray<OutlineNode>, keyPath: ReadonlyArray<string>, from: number, to: number) => {
    let cursor = from
    for (const node of list) {
      if (node.start > cursor) leaf(cursor, node.start, keyPath)
      const own = [...keyPath, node.key]
      if (node.end - node.start <= options.maxLines || node.children.length === 0)
        leaf(node.start, node.end, own, inner(node))
      else emit(node.children, own, node.start, node.end)
      cursor = Math.max(cursor, node.end)
    }
    if (to > cursor) leaf(cursor, to, keyPath)
  }
  emit(nodes, [], 0, lines.length)
  return chunks
}

/** A source file: top-level declarations with their doc comments; short neighbours joined. */
const chunkSource = (lines: ReadonlyArray<string>, found: ReturnType<typeof declarations>, options: ChunkOptions) => {
  const chunks: Array<Chunk> = []
  const groups: Array<{ start: number; end: number; names: Array<string> }> = []
  const first = found[0]?.start ?? lines.length
  if (first > 0) groups.push({ start: 0, end: first, names: [] })
  for (const d of found) {
    const last = groups[groups.length - 1]
    const small = (g: { start: number; end: number }) => g.end - g.start < 8
    if (last !== undefined && (small(last) || small(d)) && d.end - last.start <= options.maxLines) {
      last.end = d.end
      // `struct S` then `impl S` (or a declaration and its overloads) name one thing: heading "S", not "S, S".
      if (!last.names.includes(d.name)) last.names.push(d.name)
    } else groups.push({ start: d.start, end: d.end, names: [d.name] })
  }
  for (const g of groups) {
    const heading = g.names.slice(0, 4).join(", ") + (g.names.length > 4 ? ", …" : "")
    chunks.push(...chunkWindows(lines.slice(g.start, g.end), g.start + 1, heading, options))
  }
  return chunks
}

export const isMarkdown = (path: string) => /\.(md|markdown|mdx)$/i.test(path)

/**
 * The chunks of one file by its kind: Markdown by headings, JSON/YAML/TOML by keys, source files of
 * recognisable languages by declarations, anything else (or a file that does not scan as its kind) by
 * line windows with overlap.
 */
export const chunkFile = (path: string, given: string, options: ChunkOptions): Array<Chunk> => {
  // A UTF-8 byte-order mark is no content (it hid a first-line heading or key); it takes no line of its own.
  const text = given.startsWith("\uFEFF") ? given.slice(1) : given
  if (isMarkdown(path)) return chunkMarkdown(text, options)
  const lines = splitLines(text)
  const kind = structuredKind(path)
  if (kind !== undefined) {
    const outline = kind === "json" ? outlineJson(text) : kind === "yaml" ? outlineYaml(lines) : outlineToml(lines)
    if (outline !== undefined) return chunkOutline(path, lines, outline, options)
    return chunkWindows(lines, 1, "", options, [], () => configWords(path, []))
  }
  const language = sourceLanguage(path)
  if (language !== undefined) {
    const found = declarations(lines, language)
    if (found.length > 0) return chunkSource(lines, found, options)
  }
  return chunkLines(lines, 1, "", options)
}

/** A NUL byte in the first 8 KB means binary (git's own heuristic). */
export const isBinary = (bytes: Uint8Array) => bytes.subarray(0, 8000).includes(0)
