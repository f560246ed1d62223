import { isStopword, stem, stems, words } from "./Terms.js"

/**
 * The ranking's pure half: rank fusion, the reranker's features and the support score that decides
 * abstention. docs/groundtruth.md states the weights; they were tuned on the whole evaluation set
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
  /** The chunk's digest: caches what the reranker computed of it. */
  readonly digest?: string | undefined
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

/** What the reranker reads of a passage, computed in one pass over its words. */
interface Analysis {
  readonly all: ReadonlySet<string>
  readonly heading: ReadonlySet<string>
  readonly lines: ReadonlyArray<ReadonlySet<string>>
  readonly pairs: ReadonlySet<string>
}

const analyses = new Map<string, Analysis>()
const ANALYSIS_CACHE_LIMIT = 20_000

const analyze = (passage: Passage): Analysis => {
  const lines: Array<Set<string>> = []
  const all = stems(`${passage.heading}\n${passage.terms}`)
  const pairs = new Set<string>()
  let previous: string | undefined
  for (const line of passage.content.split("\n")) {
    const set = new Set<string>()
    for (const word of words(line)) {
      const s = stem(word)
      if (previous !== undefined && previous !== s) pairs.add(`${previous} ${s}`)
      previous = s
      if (isStopword(word)) continue
      set.add(s)
      all.add(s)
    }
    lines.push(set)
  }
  return { all, heading: stems(`${passage.heading} ${passage.path}`), lines, pairs }
}

/** A passage's analysis, cached by its digest when it has one (a digest names its exact text). */
const analysisOf = (passage: Passage) => {
  if (passage.digest === undefined || passage.digest === "") return analyze(passage)
  const key = `${passage.digest}\0${passage.path}`
  let found = analyses.get(key)
  if (found === undefined) {
    found = analyze(passage)
    if (analyses.size >= ANALYSIS_CACHE_LIMIT) analyses.clear()
    analyses.set(key, found)
  }
  return found
}

export const features = (profile: QueryProfile, passage: Passage, fusion: number, trustWeight: number): Features => {
  const { all, heading, lines, pairs } = analysisOf(passage)
  let covered = 0
  let headed = 0
  for (const [s, w] of profile.weights) {
    if (all.has(s)) covered += w
    if (heading.has(s)) headed += w
  }
  let dense = 0
  for (let start = 0; start < Math.max(1, lines.length - DENSITY_LINES + 1); start++) {
    let w = 0
    for (const [s, weight] of profile.weights) {
      if (heading.has(s)) {
        w += weight
        continue
      }
      for (let i = start; i < Math.min(lines.length, start + DENSITY_LINES); i++) {
        if (lines[i]!.has(s)) {
          w += weight
          break
        }
      }
    }
    if (w > dense) dense = w
  }
  let adjacent = 0
  for (let i = 1; i < profile.sequence.length; i++) {
    if (pairs.has(`${profile.sequence[i - 1]} ${profile.sequence[i]}`)) adjacent++
  }
  return {
    fusion,
    coverage: profile.total > 0 ? covered / profile.total : 0,
    density: profile.total > 0 ? dense / profile.total : 0,
    heading: profile.total > 0 ? headed / profile.total : 0,
    proximity: profile.sequence.length > 1 ? adjacent / (profile.sequence.length - 1) : 0,
    named: profile.named.has(passage.repo) ? 1 : 0,
    trust: trustWeight
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

/** The question's stems in order, without repeats. */
export const stemSequence = (question: string, isStop: (w: string) => boolean) => {
  const out: Array<string> = []
  for (const word of words(question)) {
    if (isStop(word) || word.length < 2) continue
    const s = stem(word)
    if (out[out.length - 1] !== s) out.push(s)
  }
  return out
}

export interface Abstention {
  readonly missing: boolean
  /** Why: no passage at all, a salient term no indexed passage holds, or support below the threshold. */
  readonly reason: "no_passages" | "salient_term_unknown" | "low_support" | null
  readonly support: number
  /** The salient terms no indexed passage holds. */
  readonly unknown: ReadonlyArray<string>
}

/** The passages whose support counts: the best of the first SUPPORT_DEPTH. */
export const SUPPORT_DEPTH = 3

/**
 * The grounded-abstention rule (docs/groundtruth.md): `missing` when nothing matched; when a salient
 * term of the question (an identifier, a version, a flag, a name — see salientTerms) is held by no
 * indexed passage at all, the names of the sources excepted (the sources cannot be about what they
 * never mention); or when the best support among the first SUPPORT_DEPTH passages (idf-weighted share
 * of the question's stems) is below `minSupport`.
 */
export const abstain = (
  salient: ReadonlyArray<string>,
  documentFrequency: (stem: string) => number,
  hits: ReadonlyArray<{ readonly support: number }>,
  options: { readonly minSupport: number; readonly sourceNames: ReadonlyArray<string> }
): Abstention => {
  if (hits.length === 0) return { missing: true, reason: "no_passages", support: 0, unknown: [] }
  const support = Math.max(...hits.slice(0, SUPPORT_DEPTH).map((h) => h.support))
  const names = new Set(options.sourceNames.map((n) => n.toLowerCase()))
  const unknown = salient.filter((term) => !names.has(term) && documentFrequency(stem(term)) === 0)
  if (unknown.length > 0) return { missing: true, reason: "salient_term_unknown", support, unknown }
  if (support < options.minSupport) return { missing: true, reason: "low_support", support, unknown }
  return { missing: false, reason: null, support, unknown }
}
