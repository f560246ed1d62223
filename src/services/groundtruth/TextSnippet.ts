/**
 * FTS5's `snippet(…, 24)` done in TypeScript for engines without it: the window of `size` tokens of the text
 * that holds the most distinct query words (each first one scores 1000, a repeat 1), placed so its hits sit in
 * the middle, cut with '…' where the text goes on; text before the window's first token is kept only at the start
 * of the text, after its last token only at the end (as FTS5 does).
 */
export interface Hit {
  /** The token's index in the text (0-based, counting letters-and-digits runs). */
  readonly at: number
  /** Which query word it matches. */
  readonly word: string
}

const TOKEN = /[\p{L}\p{N}]+/gu

const windowScore = (hits: ReadonlyArray<Hit>, start: number, size: number) => {
  const seen = new Set<string>()
  let score = 0
  let first = -1
  let last = 0
  for (const hit of hits) {
    if (hit.at < start || hit.at >= start + size) continue
    score += seen.has(hit.word) ? 1 : 1000
    seen.add(hit.word)
    if (first < 0) first = hit.at
    last = hit.at + 1
  }
  return { score, first, last }
}

export const snippetOf = (text: string, hits: ReadonlyArray<Hit>, size = 24, ellipsis = "…") => {
  const tokens = [...text.matchAll(TOKEN)].map((m) => ({ start: m.index, end: m.index + m[0].length }))
  if (tokens.length === 0) return text
  let bestScore = 0
  let bestStart = 0
  for (const hit of hits) {
    const { score, first, last } = windowScore(hits, hit.at, size)
    if (score <= bestScore) continue
    let start = first - Math.floor((size - (last - first)) / 2)
    if (start + size > tokens.length) start = tokens.length - size
    bestScore = score
    bestStart = Math.max(0, start)
  }
  const end = Math.min(tokens.length, bestStart + size) - 1
  const from = bestStart === 0 ? 0 : tokens[bestStart]!.start
  const to = end >= tokens.length - 1 ? text.length : tokens[end]!.end
  return `${bestStart > 0 ? ellipsis : ""}${text.slice(from, to)}${end < tokens.length - 1 ? ellipsis : ""}`
}
