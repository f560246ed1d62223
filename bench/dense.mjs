// Dense-search bench: the ground-truth bench's corpus (>= 100,000 chunks of real Markdown), every chunk
// given a DIMS-dimensional vector (384, the size of the small sentence-embedding models) by a local
// OpenAI-compatible embeddings server run here — a feature-hashing model (each word a fixed pseudo-random
// direction, a text the normalized sum of its words'), which costs nothing to compute and gives vectors
// that cluster like real ones: texts sharing words are near. Measures, through the library in this
// process, the same two-word queries ranked lexically only (the baseline), with dense search exact (brute
// force over the float32 matrix) and through the HNSW graph; the graph's build time; and how often the
// graph's top 10 equals the exact top 10. Sequential queries: latency, not throughput.
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { Effect } from "effect"
import { buildCorpus, searcher } from "./gt-corpus.mjs"
import { start } from "./harness.mjs"

const TARGET_CHUNKS = Number(process.env.BENCH_CHUNKS ?? 100_000)
const QUERIES = Number(process.env.BENCH_QUERIES ?? 300)
const DIMS = Number(process.env.BENCH_DIMS ?? 384)
const work = fs.mkdtempSync(path.join(os.tmpdir(), "keel-bench-dense-"))
const { registry, chunks, queries } = buildCorpus(work, { targetChunks: TARGET_CHUNKS, queryCount: QUERIES })

// ---------------------------------------------------------------- the feature-hashing embeddings server
const directions = new Map()
const directionOf = (word) => {
  let v = directions.get(word)
  if (v !== undefined) return v
  let h = 2166136261
  for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 16777619) >>> 0
  let state = h % 2147483646 || 1
  v = new Float32Array(DIMS)
  for (let d = 0; d < DIMS; d++) {
    state = (state * 48271) % 2147483647
    v[d] = state / 2147483647 - 0.5
  }
  directions.set(word, v)
  return v
}
const embed = (text) => {
  const out = new Float64Array(DIMS)
  for (const word of text.toLowerCase().match(/[a-z0-9]{3,}/g) ?? []) {
    const v = directionOf(word)
    for (let d = 0; d < DIMS; d++) out[d] += v[d]
  }
  let norm = 0
  for (const x of out) norm += x * x
  norm = Math.sqrt(norm) || 1
  return Array.from(out, (x) => Math.round((x / norm) * 1e6) / 1e6)
}
const server = http.createServer((req, res) => {
  let body = ""
  req.on("data", (c) => {
    body += c
  })
  req.on("end", () => {
    const { input } = JSON.parse(body)
    res.writeHead(200, { "content-type": "application/json" })
    res.end(JSON.stringify({ data: input.map((text, index) => ({ index, embedding: embed(text) })) }))
  })
})
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve))
const embeddingsUrl = `http://127.0.0.1:${server.address().port}/v1`

// ---------------------------------------------------------------- ingest, vectors included
const base = {
  KEEL_DATA_DIR: path.join(work, "data"),
  GT_REGISTRY_REPO: registry,
  GT_CHUNK_MAX_LINES: "40",
  GT_CHUNK_OVERLAP_LINES: "5",
  KEEL_LOG_LEVEL: "warning",
  KEEL_DEMO_DATA: "false",
  GT_EMBEDDINGS_URL: embeddingsUrl,
  GT_EMBEDDINGS_MODEL: `hashing-${DIMS}`,
  GT_EMBEDDINGS_TIMEOUT_MS: "60000"
}
Object.assign(process.env, base)
const keel = await import("keel")
const withServices = (env, effect) => {
  for (const key of ["GT_EMBEDDINGS_URL", "GT_ANN_MIN_VECTORS"]) delete process.env[key]
  Object.assign(process.env, env)
  return Effect.runPromise(effect.pipe(Effect.provide(keel.Layers.ServicesLive)))
}
const t0 = Date.now()
const ingested = await withServices(
  base,
  Effect.flatMap(keel.GroundTruth.Ingester, (ingester) => ingester.ingest({}))
)
const ingestSeconds = (Date.now() - t0) / 1000
const source = ingested.sources[0]

const percentile = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]

/** Every query ranked once (after 20 to warm up): latencies and the top 10 of each. */
const measure = (retriever) =>
  Effect.gen(function* () {
    for (const q of queries.slice(0, 20)) yield* retriever.search(q, { limit: 10 })
    const latencies = []
    const tops = []
    for (const q of queries) {
      const t = process.hrtime.bigint()
      const result = yield* retriever.search(q, { limit: 10 })
      latencies.push(Number(process.hrtime.bigint() - t) / 1e6)
      // The corpus holds copies of the same documents: a hit is its document and lines, whichever copy.
      tops.push(result.hits.map((h) => `${h.path.replace(/^copy-\d+\//, "")}:${h.line}`))
    }
    return { latencies, tops }
  })

const lexical = await withServices({}, Effect.flatMap(keel.GroundTruth.Retriever, measure))
const exact = await withServices(
  { GT_EMBEDDINGS_URL: embeddingsUrl, GT_ANN_MIN_VECTORS: String(10 * chunks) },
  Effect.flatMap(keel.GroundTruth.Retriever, measure)
)
const graph = await withServices(
  { GT_EMBEDDINGS_URL: embeddingsUrl, GT_ANN_MIN_VECTORS: "1" },
  Effect.gen(function* () {
    const retriever = yield* keel.GroundTruth.Retriever
    const started = Date.now()
    yield* retriever.search(queries[0], { limit: 10 }) // starts the build
    let status = yield* retriever.denseStatus
    // Bounded: a build that does not finish in 10 minutes is reported, not waited for.
    while (status.search !== "graph" && status.building && Date.now() - started < 600_000) {
      yield* Effect.sleep("200 millis")
      status = yield* retriever.denseStatus
    }
    if (status.search !== "graph") return { status, buildSeconds: (Date.now() - started) / 1000 }
    const buildSeconds = (Date.now() - started) / 1000
    return { status, buildSeconds, ...(yield* measure(retriever)) }
  })
)
// A restart over the same index: the kept graph is mapped by the first question, not built again.
const restart = await withServices(
  { GT_EMBEDDINGS_URL: embeddingsUrl, GT_ANN_MIN_VECTORS: "1" },
  Effect.gen(function* () {
    const retriever = yield* keel.GroundTruth.Retriever
    // How long the process could not answer anything else while the first question read the index: the
    // longest gap between the ticks of a 1 ms timer (running for a while before, so its first gap counts).
    let last = performance.now()
    let stallMs = 0
    const ticker = setInterval(() => {
      const now = performance.now()
      stallMs = Math.max(stallMs, now - last)
      last = now
    }, 1)
    yield* Effect.sleep("30 millis")
    stallMs = 0
    const t = process.hrtime.bigint()
    yield* retriever.search(queries[0], { limit: 10 })
    const firstMs = Number(process.hrtime.bigint() - t) / 1e6
    yield* Effect.sleep("30 millis") // a timer that fires late after a stall records it then
    clearInterval(ticker)
    return { firstMs, stallMs, status: yield* retriever.denseStatus }
  })
)
// The same through HTTP: a Keel server over the same data (it maps the kept graph at its first question).
const { child, port } = await start("keel.mjs", { ...base, GT_ANN_MIN_VECTORS: "1" })
const client = searcher(port)
for (const q of queries.slice(0, 20)) await client.search(q) // warm: loads the vectors, maps the graph
const httpLatencies = []
for (const q of queries) httpLatencies.push(await client.search(q))
client.close()
child.kill("SIGTERM")
server.close()

const line = (label, latencies) =>
  `${label} p50 ${percentile(latencies, 0.5).toFixed(2)} ms  p99 ${percentile(latencies, 0.99).toFixed(2)} ms`
console.log(
  `corpus: ${source.files_indexed} files, ${source.chunks} chunks, ${source.vectors_computed} vectors of ${DIMS} dimensions (ingest with embedding ${ingestSeconds.toFixed(1)} s), ${os.cpus().length} cores`
)
console.log(line(`search (library, ${QUERIES} two-word queries), lexical only:      `, lexical.latencies))
console.log(line("search, embedder on, dense exact (brute force):        ", exact.latencies))
if (graph.latencies === undefined) {
  console.log(`graph not ready after ${graph.buildSeconds.toFixed(1)} s: ${JSON.stringify(graph.status)}`)
  process.exitCode = 1
} else {
  console.log(line("search, embedder on, dense through the HNSW graph:     ", graph.latencies))
  let same = 0
  let shared = 0
  exact.tops.forEach((top, i) => {
    const other = graph.tops[i]
    if (JSON.stringify(top) === JSON.stringify(other)) same++
    const set = new Set(top)
    shared += top.length === 0 ? 1 : other.filter((h) => set.has(h)).length / top.length
  })
  console.log(line("search through HTTP, embedder on, graph (a Keel server):  ", httpLatencies))
  console.log(
    `restart over the same index: the kept graph ${restart.status.search === "graph" ? "mapped" : "NOT used"} by the first question (${restart.firstMs.toFixed(1)} ms, loading the vectors from SQLite included; longest event-loop stall meanwhile ${restart.stallMs.toFixed(1)} ms)`
  )
  const dense = (xs) => percentile(xs, 0.5) - percentile(lexical.latencies, 0.5)
  console.log(
    `graph: built in ${graph.buildSeconds.toFixed(1)} s in a worker thread (exact search answered meanwhile); top 10 identical to exact (copies of a document count as one) in ${((100 * same) / QUERIES).toFixed(0)}% of queries, ${((100 * shared) / QUERIES).toFixed(1)}% of hits shared`
  )
  console.log(
    `dense part of a search at p50 (embedder on − lexical only, the question's embedding request included): exact ${dense(exact.latencies).toFixed(2)} ms, graph ${dense(graph.latencies).toFixed(2)} ms; ratio exact/graph ${(dense(exact.latencies) / dense(graph.latencies)).toFixed(1)}x`
  )
}
if (process.env.BENCH_KEEP === "1") console.log(`kept: ${work}`)
else fs.rmSync(work, { recursive: true, force: true })
