// Fits the abstention model of src/services/groundtruth/Abstention.ts (ABSTENTION_MODEL) on the evaluation
// set, and measures it honestly first: 10-fold stratified cross-validation of the whole procedure
// (standardise, fit, choose the threshold) over the answerable and unanswerable questions together, each
// question flagged by a model that never saw it. Then the same procedure on all of them gives the constants
// to ship, printed as TypeScript.
//   npm run build && node eval/groundtruth/fit-abstention.mjs
// The features are the library's own (Answerer.examine, as /ask computes them), lexical ranking.
import * as fs from "node:fs"
import { Effect } from "effect"
import { buildWorkspace, importKeel, questions } from "./corpus.mjs"

/** L2 penalty of the logistic regression. */
const LAMBDA = 0.01
/** The threshold flags at most this share of the training set's answerable questions (hard rules included). */
const MAX_WRONG_SHARE = 0.03
const FOLDS = 10
const STEPS = 3000
const RATE = 0.5

const workspace = buildWorkspace()
const keel = await importKeel(workspace)
const names = keel.ABSTENTION_FEATURES
const rows = await Effect.runPromise(
  Effect.gen(function* () {
    yield* (yield* keel.Ingester).ingest({})
    const answerer = yield* keel.Answerer
    const out = []
    for (const q of questions) {
      const { verdict } = yield* answerer.examine(q.question, undefined, 5)
      out.push({
        id: q.id,
        unanswerable: q.unanswerable === true,
        x: names.map((n) => verdict.features[n]),
        // The rules that flag before the model: nothing matched, a salient term unknown, support below the floor.
        hard: verdict.reason !== null && verdict.reason !== "not_supported"
      })
    }
    return out
  }).pipe(Effect.provide(keel.ServicesLive))
)
fs.rmSync(workspace.work, { recursive: true, force: true })

/** Standardise, fit a class-balanced L2 logistic regression by gradient descent, choose the threshold. */
const fitModel = (train) => {
  const d = names.length
  const mean = names.map((_, j) => train.reduce((s, r) => s + r.x[j], 0) / train.length)
  const scale = names.map(
    (_, j) => Math.sqrt(train.reduce((s, r) => s + (r.x[j] - mean[j]) ** 2, 0) / train.length) || 1
  )
  const z = train.map((r) => r.x.map((v, j) => (v - mean[j]) / scale[j]))
  const positives = train.filter((r) => r.unanswerable).length
  const negatives = train.length - positives
  let weights = new Array(d).fill(0)
  let bias = 0
  for (let step = 0; step < STEPS; step++) {
    const gradient = new Array(d).fill(0)
    let gradientBias = 0
    train.forEach((r, i) => {
      const p = 1 / (1 + Math.exp(-(bias + z[i].reduce((s, v, j) => s + v * weights[j], 0))))
      const error = (p - (r.unanswerable ? 1 : 0)) * (r.unanswerable ? 0.5 / positives : 0.5 / negatives)
      gradientBias += error
      z[i].forEach((v, j) => {
        gradient[j] += error * v
      })
    })
    weights = weights.map((w, j) => w - RATE * (gradient[j] + LAMBDA * w))
    bias -= RATE * gradientBias
  }
  const score = (x) => bias + x.reduce((s, v, j) => s + (weights[j] * (v - mean[j])) / scale[j], 0)
  const answerable = train.filter((r) => !r.unanswerable)
  const allowed = Math.floor(MAX_WRONG_SHARE * answerable.length) - answerable.filter((r) => r.hard).length
  const scores = answerable
    .filter((r) => !r.hard)
    .map((r) => score(r.x))
    .sort((a, b) => b - a)
  // Flag above the (allowed+1)-th highest answerable score: at most `allowed` of them are above it.
  const threshold = allowed < 0 ? Number.POSITIVE_INFINITY : (scores[allowed] ?? Number.NEGATIVE_INFINITY)
  return { mean, scale, weights, bias, threshold, flags: (r) => r.hard || score(r.x) > threshold }
}

const figures = (flagged) => {
  const unanswerable = rows.filter((r) => r.unanswerable)
  const answerable = rows.filter((r) => !r.unanswerable)
  const hit = unanswerable.filter((r) => flagged.has(r)).length
  const wrong = answerable.filter((r) => flagged.has(r)).length
  return `flagged ${hit}/${unanswerable.length} unanswerable (recall ${(hit / unanswerable.length).toFixed(2)}), precision ${(hit + wrong === 0 ? 1 : hit / (hit + wrong)).toFixed(2)}, answerable wrongly flagged ${wrong}/${answerable.length}`
}

// Stratified folds, deterministic: the i-th question of each class goes to fold i mod FOLDS.
const folds = Array.from({ length: FOLDS }, () => [])
for (const group of [rows.filter((r) => r.unanswerable), rows.filter((r) => !r.unanswerable)])
  group.forEach((r, i) => {
    folds[i % FOLDS].push(r)
  })
const outOfFold = new Set()
folds.forEach((held, k) => {
  const model = fitModel(folds.flatMap((f, j) => (j === k ? [] : f)))
  for (const r of held) if (model.flags(r)) outOfFold.add(r)
})
const hardOnly = new Set(rows.filter((r) => r.hard))
const final = fitModel(rows)
const inSample = new Set(rows.filter((r) => final.flags(r)))

console.log(
  `questions: ${rows.filter((r) => !r.unanswerable).length} answerable + ${rows.filter((r) => r.unanswerable).length} unanswerable`
)
console.log(`hard rules alone:                 ${figures(hardOnly)}`)
console.log(`${FOLDS}-fold cross-validated (out of fold): ${figures(outOfFold)}`)
console.log(`fitted on all (in sample):        ${figures(inSample)}`)
const round = (v) => Math.round(v * 1e4) / 1e4
const record = (values) => `{ ${names.map((n, j) => `${n}: ${round(values[j])}`).join(", ")} }`
console.log(`export const ABSTENTION_MODEL = {
  mean: ${record(final.mean)},
  scale: ${record(final.scale)},
  weights: ${record(final.weights)},
  bias: ${round(final.bias)},
  threshold: ${round(final.threshold)}
} as const`)
