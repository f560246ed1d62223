import { stem } from "./Terms.js"

/**
 * Grounded abstention (docs/groundtruth.md, "Ask"): whether the passages the ranking found answer the
 * question at all. Everything here is known at question time — the question's stems and their idf over
 * the index, which of them each passage holds, and the document frequencies — never anything from the
 * evaluation's question set.
 */

/** The passages whose support and density count: the best of the first SUPPORT_DEPTH. */
export const SUPPORT_DEPTH = 3

/** The passages the rule examines for the question's uncovered terms (and the least `/ask` retrieves). */
export const EXAMINED_DEPTH = 10

/** What the rule reads of a passage (Retriever's RankedHit has these). */
export interface ExaminedPassage {
  /** idf-weighted share of the question's stems the passage holds (0..1). */
  readonly support: number
  /** The best idf-weighted share within a few consecutive lines (0..1). */
  readonly density: number
  /** The question's stems the passage holds. */
  readonly matched: ReadonlyArray<string>
}

/** The model's inputs, each 0..1. */
export interface AbstentionFeatures {
  /** idf share of the question's stems that none of the first EXAMINED_DEPTH passages holds. */
  readonly uncovered: number
  /** idf share of the question's rarest third of stems (by idf) that none of the first SUPPORT_DEPTH passages holds. */
  readonly rare_uncovered: number
  /** idf share of the question's stems that no indexed passage holds at all. */
  readonly absent: number
  /** The best support among the first SUPPORT_DEPTH passages. */
  readonly support: number
  /** The best density among the first SUPPORT_DEPTH passages. */
  readonly density: number
}

export const ABSTENTION_FEATURES = ["uncovered", "rare_uncovered", "absent", "support", "density"] as const

/**
 * A logistic model over the features (standardised by `mean` and `scale`): the question is not covered
 * when its score (the log-odds) exceeds `threshold`.
 *
 * How these numbers were obtained (reproduce with `node eval/groundtruth/fit-abstention.mjs` after
 * `npm run build`): the 120 answerable and 66 unanswerable questions of eval/groundtruth, asked through
 * the library (lexical ranking), give each question these features; a class-balanced, L2-regularised
 * (λ 0.01) logistic regression is fitted on all of them, and `threshold` is the lowest score at which at
 * most 3 % of the answerable questions are flagged, counting those the hard rules (a salient term no
 * passage holds, support below GT_ASK_MIN_SCORE) already flag. Its out-of-sample figures, from 10-fold
 * stratified cross-validation of the same procedure, are in docs/groundtruth.md.
 */
export const ABSTENTION_MODEL = {
  mean: { uncovered: 0.259, rare_uncovered: 0.5249, absent: 0.0702, support: 0.5221, density: 0.4769 },
  scale: { uncovered: 0.187, rare_uncovered: 0.2988, absent: 0.1292, support: 0.1731, density: 0.1591 },
  weights: { uncovered: 0.116, rare_uncovered: 0.434, absent: 0.474, support: -0.0971, density: 0.2761 },
  bias: -0.0546,
  threshold: 1.4267
} as const

export type AbstentionModel = {
  readonly mean: Readonly<Record<keyof AbstentionFeatures, number>>
  readonly scale: Readonly<Record<keyof AbstentionFeatures, number>>
  readonly weights: Readonly<Record<keyof AbstentionFeatures, number>>
  readonly bias: number
  readonly threshold: number
}

export interface Abstention {
  readonly missing: boolean
  /**
   * Why: no passage at all, a salient term no indexed passage holds, support below GT_ASK_MIN_SCORE, or
   * the model's score above its threshold.
   */
  readonly reason: "no_passages" | "salient_term_unknown" | "low_support" | "not_supported" | null
  readonly support: number
  /** The salient terms no indexed passage holds. */
  readonly unknown: ReadonlyArray<string>
  readonly features: AbstentionFeatures
  /** The model's log-odds that the passages do not answer the question. */
  readonly score: number
}

const share = (weights: ReadonlyMap<string, number>, stems: Iterable<string>, total: number) => {
  let sum = 0
  for (const s of stems) sum += weights.get(s) ?? 0
  return total > 0 ? sum / total : 0
}

/** The features of a question (its stems' idf `weights`) against its ranked passages. */
export const abstentionFeatures = (
  weights: ReadonlyMap<string, number>,
  documentFrequency: (stem: string) => number,
  hits: ReadonlyArray<ExaminedPassage>
): AbstentionFeatures => {
  const stems = [...weights.keys()]
  let total = 0
  for (const w of weights.values()) total += w
  const heldBy = (depth: number) => new Set(hits.slice(0, depth).flatMap((h) => h.matched))
  const examined = heldBy(EXAMINED_DEPTH)
  const first = heldBy(SUPPORT_DEPTH)
  // Sorted by idf, ties by name, so the rarest third is the same whatever order the question said them in.
  const rarest = [...stems]
    .sort((a, b) => weights.get(b)! - weights.get(a)! || a.localeCompare(b))
    .slice(0, Math.max(1, Math.ceil(stems.length / 3)))
  const rareTotal = share(weights, rarest, 1)
  const top = hits.slice(0, SUPPORT_DEPTH)
  return {
    uncovered: share(
      weights,
      stems.filter((s) => !examined.has(s)),
      total
    ),
    rare_uncovered: share(
      weights,
      rarest.filter((s) => !first.has(s)),
      rareTotal
    ),
    absent: share(
      weights,
      stems.filter((s) => documentFrequency(s) === 0),
      total
    ),
    support: Math.max(0, ...top.map((h) => h.support)),
    density: Math.max(0, ...top.map((h) => h.density))
  }
}

/** The model's log-odds that the passages do not answer the question. */
export const abstentionScore = (f: AbstentionFeatures, model: AbstentionModel = ABSTENTION_MODEL) => {
  let score = model.bias
  for (const name of ABSTENTION_FEATURES)
    score += (model.weights[name] * (f[name] - model.mean[name])) / model.scale[name]
  return score
}

/**
 * The grounded-abstention rule: `missing` when nothing matched; when a salient term of the question (an
 * identifier, a version, a flag, a name — see salientTerms) is held by no indexed passage at all, the
 * names of the sources excepted (the sources cannot be about what they never mention); when the support
 * is below `minSupport`; or when the fitted model's score exceeds its threshold.
 */
export const abstain = (
  question: {
    readonly weights: ReadonlyMap<string, number>
    readonly salient: ReadonlyArray<string>
    readonly documentFrequency: (stem: string) => number
  },
  hits: ReadonlyArray<ExaminedPassage>,
  options: {
    readonly minSupport: number
    readonly sourceNames: ReadonlyArray<string>
    readonly model?: AbstentionModel
  }
): Abstention => {
  const features = abstentionFeatures(question.weights, question.documentFrequency, hits)
  const score = abstentionScore(features, options.model)
  const verdict = { support: features.support, features, score }
  if (hits.length === 0) return { ...verdict, missing: true, reason: "no_passages", unknown: [] }
  const names = new Set(options.sourceNames.map((n) => n.toLowerCase()))
  const unknown = question.salient.filter((term) => !names.has(term) && question.documentFrequency(stem(term)) === 0)
  if (unknown.length > 0) return { ...verdict, missing: true, reason: "salient_term_unknown", unknown }
  if (features.support < options.minSupport) return { ...verdict, missing: true, reason: "low_support", unknown }
  if (score > (options.model ?? ABSTENTION_MODEL).threshold)
    return { ...verdict, missing: true, reason: "not_supported", unknown }
  return { ...verdict, missing: false, reason: null, unknown }
}
