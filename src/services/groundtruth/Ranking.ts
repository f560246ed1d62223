/**
 * The ranking's pure half: rank fusion and the reranker's features (the abstention rule that reads
 * them is Abstention.ts). docs/groundtruth.md states the weights; they were tuned on the whole evaluation set
 * (eval/groundtruth), never on single questions.
 */

/** Reciprocal rank fusion's damping constant (Cormack et al. 2009 use 60). */
export const RRF_K = 60

/** Σ 1/(k + rank) over the lists an id appears in (rank 1-based); lists may weigh differently. */
export const reciprocalRankFusion = (
  lists: ReadonlyArray<{ readonly ids: ReadonlyArray<number>; readonly weight: number }>
): Map<number, number> => {
  const fused = new Map<number, number>()
  for (const list of lists) {
    list.ids.forEach((id, i) => {
      fused.set(id, (fused.get(id) ?? 0) + list.weight / (RRF_K + i + 1))
    })
  }
  return fused
}

/** idf of a stem: ln(1 + N / (df + 1)); a stem no passage holds weighs the most. */
export const idf = (documents: number, df: number) => Math.log(1 + documents / (df + 1))

export interface Passage {
  readonly repo: string
  readonly path: string
  readonly heading: string
  readonly content: string
  readonly terms: string
}

export interface QueryProfile {
  /** The question's distinct stems and their idf weights. */
  readonly weights: ReadonlyMap<string, number>
  readonly total: number
  /** The stems in question order, for adjacency. */
  readonly sequence: ReadonlyArray<string>
  /** Sources the question names (by name). */
  readonly named: ReadonlySet<string>
}

export const DENSITY_LINES = 8

export const RERANK_WEIGHTS = {
  fusion: 1,
  coverage: 0.3,
  density: 0.5,
  heading: 0.5,
  proximity: 0.2,
  named: 0.3,
  trust: 0.02
} as const

export interface Features {
  /** The fused rank score, scaled so the best candidate is 1. */
  readonly fusion: number
  /** idf-weighted share of the question's stems the passage holds (0..1): the support score. */
  readonly coverage: number
  /** The best idf-weighted share within DENSITY_LINES consecutive lines: answers are local. */
  readonly density: number
  /** idf-weighted share found in the heading or path. */
  readonly heading: number
  /** Share of the question's adjacent stem pairs that are adjacent in the passage too. */
  readonly proximity: number
  readonly named: number
  readonly trust: number
}

const WORD_CHAR = /[\p{L}\p{N}_]/u

/**
 * Where a stem occurs in lower-cased text: at the start of a word (so "install" is found in
 * "installing", not in "reinstall"). Searching the passage for the question's few stems with indexOf
 * costs far less than tokenising every passage, which is what keeps reranking inside the latency goal.
 */
const occurrences = (text: string, s: string): Array<number> => {
  const found: Array<number> = []
  for (let at = text.indexOf(s); at >= 0; at = text.indexOf(s, at + 1)) {
    if (at === 0 || !WORD_CHAR.test(text[at - 1]!)) found.push(at)
  }
  return found
}

/** Index of the line holding offset `at`, given the sorted offsets of the newlines. */
const lineOf = (newlines: ReadonlyArray<number>, at: number) => {
  let lo = 0
  let hi = newlines.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (newlines[mid]! < at) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** The features, and the question's stems the passage holds (in its text, heading, path or hidden terms). */
export interface PassageMatch extends Features {
  readonly matched: ReadonlyArray<string>
}

export const features = (
  profile: QueryProfile,
  passage: Passage,
  fusion: number,
  trustWeight: number
): PassageMatch => {
  const content = passage.content.toLowerCase()
  const extra = `${passage.heading}\n${passage.terms}`.toLowerCase()
  const headingText = `${passage.heading}\n${passage.path}`.toLowerCase()
  const newlines: Array<number> = []
  for (let at = content.indexOf("\n"); at >= 0; at = content.indexOf("\n", at + 1)) newlines.push(at)
  const lineCount = newlines.length + 1
  let covered = 0
  let headed = 0
  const matched: Array<string> = []
  const linesOf = new Map<string, ReadonlyArray<number>>()
  const positions = new Map<string, ReadonlyArray<number>>()
  for (const [s, w] of profile.weights) {
    const at = occurrences(content, s)
    positions.set(s, at)
    const inHeading = occurrences(headingText, s).length > 0
    if (at.length > 0 || inHeading || occurrences(extra, s).length > 0) {
      covered += w
      matched.push(s)
    }
    if (inHeading) {
      headed += w
      linesOf.set(s, [-1])
    } else
      linesOf.set(
        s,
        at.map((p) => lineOf(newlines, p))
      )
  }
  // The best idf-weighted share within DENSITY_LINES consecutive lines (heading terms count everywhere).
  let dense = 0
  for (let start = 0; start < Math.max(1, lineCount - DENSITY_LINES + 1); start++) {
    let w = 0
    for (const [s, weight] of profile.weights) {
      const lines = linesOf.get(s)!
      if (lines.some((l) => l === -1 || (l >= start && l < start + DENSITY_LINES))) w += weight
    }
    if (w > dense) dense = w
  }
  // Adjacent question stems adjacent in the passage: the first's word, then non-word characters, then the second.
  let adjacent = 0
  for (let i = 1; i < profile.sequence.length; i++) {
    const next = profile.sequence[i]!
    const follows = (positions.get(profile.sequence[i - 1]!) ?? []).some((p) => {
      let q = p
      while (q < content.length && WORD_CHAR.test(content[q]!)) q++
      const gapStart = q
      while (q < content.length && !WORD_CHAR.test(content[q]!) && q - gapStart < 3) q++
      return q > gapStart && content.startsWith(next, q)
    })
    if (follows) adjacent++
  }
  return {
    fusion,
    coverage: profile.total > 0 ? covered / profile.total : 0,
    density: profile.total > 0 ? dense / profile.total : 0,
    heading: profile.total > 0 ? headed / profile.total : 0,
    proximity: profile.sequence.length > 1 ? adjacent / (profile.sequence.length - 1) : 0,
    named: profile.named.has(passage.repo) ? 1 : 0,
    trust: trustWeight,
    matched
  }
}

export const rerankScore = (f: Features, weights: typeof RERANK_WEIGHTS = RERANK_WEIGHTS) =>
  weights.fusion * f.fusion +
  weights.coverage * f.coverage +
  weights.density * f.density +
  weights.heading * f.heading +
  weights.proximity * f.proximity +
  weights.named * f.named +
  weights.trust * f.trust
