// Ground-truth bench: a synthetic corpus of >= 100,000 chunks built from real Markdown (the READMEs
// and docs under node_modules and docs/), committed to a real git repository; ingest rate through the
// library, then search latency through HTTP beside ripgrep answering the same queries over the
// checked-out files. Sequential queries: latency, not throughput.
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect } from "effect"
import { buildCorpus, searcher } from "./gt-corpus.mjs"
import { start } from "./harness.mjs"

const TARGET_CHUNKS = Number(process.env.BENCH_CHUNKS ?? 100_000)
const QUERIES = Number(process.env.BENCH_QUERIES ?? 500)
const work = fs.mkdtempSync(path.join(os.tmpdir(), "keel-bench-gt-"))
const data = path.join(work, "data")
const { corpus, registry, files, chunks, documents, queries } = buildCorpus(work, {
  targetChunks: TARGET_CHUNKS,
  queryCount: QUERIES
})

Object.assign(process.env, {
  KEEL_DATA_DIR: data,
  GT_REGISTRY_REPO: registry,
  GT_CHUNK_MAX_LINES: "40",
  GT_CHUNK_OVERLAP_LINES: "5",
  KEEL_LOG_LEVEL: "warning"
})
const keel = await import("keel")
// The process's CPU beside the wall time: on a loaded machine the wall time says more about the neighbours.
const cpu0 = process.cpuUsage()
const t0 = Date.now()
const result = await Effect.runPromise(
  Effect.flatMap(keel.GroundTruth.Ingester, (ingester) => ingester.ingest({})).pipe(
    Effect.provide(keel.Layers.ServicesLive)
  )
)
const ingestSeconds = (Date.now() - t0) / 1000
const ingestCpu = process.cpuUsage(cpu0)
const ingestCpuSeconds = (ingestCpu.user + ingestCpu.system) / 1e6
const ingested = result.sources[0]

// The same queries through the library, in this process: the search itself, without HTTP.
const libraryLatencies = await Effect.runPromise(
  Effect.gen(function* () {
    const retriever = yield* keel.GroundTruth.Retriever
    for (const q of queries.slice(0, 20)) yield* retriever.search(q, { limit: 10 })
    const out = []
    for (const q of queries) {
      const t = process.hrtime.bigint()
      yield* retriever.search(q, { limit: 10 })
      out.push(Number(process.hrtime.bigint() - t) / 1e6)
    }
    return out
  }).pipe(Effect.provide(keel.Layers.ServicesLive))
)

const percentile = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]
// BENCH_KEEL_SERVER=keel-profiled.mjs BENCH_PROFILE_DIR=DIR writes a CPU profile of the Keel server.
const { child, port } = await start(process.env.BENCH_KEEL_SERVER ?? "keel.mjs", {
  KEEL_DATA_DIR: data,
  GT_REGISTRY_REPO: registry,
  KEEL_LOG_LEVEL: "warning",
  KEEL_DEMO_DATA: "false"
})
const { search: searchOnce, close } = searcher(port)
for (const q of queries.slice(0, 20)) await searchOnce(q) // warm
const keelLatencies = []
for (const q of queries) keelLatencies.push(await searchOnce(q))
// One hit (what /ask with k=1 retrieves): a one-element snippet lookup once took a slow FTS5 plan.
const singleLatencies = []
for (const q of queries) singleLatencies.push(await searchOnce(q, 1))
child.kill("SIGTERM")
close()

const rgLatencies = []
const rgCorpus = path.join(corpus)
for (const q of queries) {
  const [a, b] = q.split(" ")
  const t = process.hrtime.bigint()
  spawnSync("rg", ["-i", "--count-matches", "-e", a, "-e", b, rgCorpus], { stdio: "ignore" })
  rgLatencies.push(Number(process.hrtime.bigint() - t) / 1e6)
}

const p50k = percentile(keelLatencies, 0.5)
const p50r = percentile(rgLatencies, 0.5)
console.log(
  `corpus: ${files} Markdown files, ${chunks} chunks (from ${documents} real documents), ${os.cpus().length} cores`
)
console.log(
  `ingest: ${ingested.files_indexed} files, ${ingested.chunks} chunks in ${ingestSeconds.toFixed(1)} s = ${(ingested.files_indexed / ingestSeconds).toFixed(0)} files/s, ${(ingested.chunks / ingestSeconds).toFixed(0)} chunks/s; CPU ${ingestCpuSeconds.toFixed(1)} s (this process; git runs beside it)`
)
console.log(
  `search (HTTP, ${QUERIES} two-word queries, sequential): keel p50 ${p50k.toFixed(2)} ms p99 ${percentile(keelLatencies, 0.99).toFixed(2)} ms`
)
console.log(
  `search (HTTP, same queries, limit=1):            keel p50 ${percentile(singleLatencies, 0.5).toFixed(2)} ms p99 ${percentile(singleLatencies, 0.99).toFixed(2)} ms`
)
console.log(
  `search (library, same queries, no HTTP):          keel p50 ${percentile(libraryLatencies, 0.5).toFixed(2)} ms p99 ${percentile(libraryLatencies, 0.99).toFixed(2)} ms`
)
console.log(
  `baseline rg over the checked-out files:                rg   p50 ${p50r.toFixed(2)} ms p99 ${percentile(rgLatencies, 0.99).toFixed(2)} ms`
)
console.log(`ratio: keel is ${(p50r / p50k).toFixed(1)}x faster than rg at p50`)
if (process.env.BENCH_KEEP === "1") console.log(`kept: ${work}`)
else fs.rmSync(work, { recursive: true, force: true })
