/** A piece of a file with its exact 1-based line range. */
export interface Chunk {
  readonly line: number
  readonly endLine: number
  /** Markdown: the heading path ("Install > From npm"); other files: empty. */
  readonly heading: string
  readonly content: string
}

export interface ChunkOptions {
  readonly maxLines: number
  readonly overlapLines: number
}

/** Line windows of at most `maxLines`, each overlapping the previous by `overlapLines`. */
export const chunkLines = (
  lines: ReadonlyArray<string>,
  firstLine: number,
  heading: string,
  options: ChunkOptions
): Array<Chunk> => {
  const chunks: Array<Chunk> = []
  const step = Math.max(1, options.maxLines - options.overlapLines)
  for (let start = 0; start < lines.length; start += step) {
    const window = lines.slice(start, start + options.maxLines)
    if (window.some((l) => l.trim().length > 0)) {
      chunks.push({
        line: firstLine + start,
        endLine: firstLine + start + window.length - 1,
        heading,
        content: window.join("\n")
      })
    }
    if (start + options.maxLines >= lines.length) break
  }
  return chunks
}

const HEADING = /^(#{1,6})\s+(.*?)\s*#*\s*$/
const FENCE = /^\s{0,3}(```|~~~)/

/**
 * Markdown is cut at headings (outside code fences); each section carries its heading path and is
 * windowed further when longer than `maxLines`. Line numbers are those of the file.
 */
/** The file's lines; a final newline ends the last line rather than starting an empty one. */
export const splitLines = (text: string) => {
  const lines = text.split(/\r?\n/)
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop()
  return lines
}

export const chunkMarkdown = (text: string, options: ChunkOptions): Array<Chunk> => {
  const lines = splitLines(text)
  const chunks: Array<Chunk> = []
  const path: Array<string> = []
  let sectionStart = 0
  let inFence = false
  const flush = (end: number) => {
    if (end > sectionStart) {
      chunks.push(
        ...chunkLines(lines.slice(sectionStart, end), sectionStart + 1, path.filter((p) => p).join(" > "), options)
      )
    }
  }
  lines.forEach((line, i) => {
    if (FENCE.test(line)) inFence = !inFence
    if (inFence) return
    const match = HEADING.exec(line)
    if (match === null) return
    flush(i)
    const depth = (match[1] ?? "#").length
    path.length = Math.min(path.length, depth - 1)
    path[depth - 1] = match[2] ?? ""
    for (let d = 0; d < depth - 1; d++) path[d] ??= ""
    sectionStart = i
  })
  flush(lines.length)
  return chunks
}

export const isMarkdown = (path: string) => /\.(md|markdown|mdx)$/i.test(path)

export const chunkFile = (path: string, text: string, options: ChunkOptions): Array<Chunk> =>
  isMarkdown(path) ? chunkMarkdown(text, options) : chunkLines(splitLines(text), 1, "", options)

/** A NUL byte in the first 8 KB means binary (git's own heuristic). */
export const isBinary = (bytes: Uint8Array) => bytes.subarray(0, 8000).includes(0)
