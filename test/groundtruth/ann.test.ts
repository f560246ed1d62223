import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { assert, describe, it, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Logger } from "effect"
import { HttpTest } from "../support/http.js"
import {
  AnnBuildFailed,
  buildAnnGraph,
  type DenseStatus,
  Embedder,
  GtConfig,
  Ingester,
  makeVectorIndex,
  openAnnGraph,
  Retriever
} from "../support/keel.js"
import { serveFakeEmbeddings } from "./fake-embeddings.js"
import { commitFiles, initRepo } from "./git-fixture.js"

/** Deterministic pseudo-random unit vectors (a seeded LCG), so every run checks the same graph. */
const unitVectors = (count: number, dims: number, seed: number) => {
  let state = seed
  const next = () => {
    state = (state * 48271) % 2147483647
    return state / 2147483647 - 0.5
  }
  const matrix = new Float32Array(count * dims)
  for (let i = 0; i < count; i++) {
    let norm = 0
    for (let d = 0; d < dims; d++) {
      const v = next()
      matrix[i * dims + d] = v
      norm += v * v
    }
    for (let d = 0; d < dims; d++) matrix[i * dims + d] = matrix[i * dims + d]! / Math.sqrt(norm)
  }
  return matrix
}

const exactTop = (matrix: Float32Array, dims: number, ids: Int32Array, q: Float32Array, k: number) =>
  [...ids]
    .map((id, i) => {
      let dot = 0
      for (let d = 0; d < dims; d++) dot += matrix[i * dims + d]! * q[d]!
      return { id, dot }
    })
    .sort((a, b) => b.dot - a.dot)
    .slice(0, k)

describe("the HNSW graph behind dense search", () => {
  it.live("built in a worker thread, it finds the exact nearest neighbours with their cosine", () =>
    Effect.gen(function* () {
      const dims = 48
      const count = 3000
      const matrix = unitVectors(count, dims, 11)
      const ids = Int32Array.from({ length: count }, (_, i) => 10_000 + i * 3)
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-ann-"))
      const file = path.join(dir, "graph-test.usearch")
      const graph = yield* buildAnnGraph({ ids, matrix, dims, file })
      assert.strictEqual(graph.size, count)
      let found = 0
      const queries = unitVectors(25, dims, 97)
      for (let n = 0; n < 25; n++) {
        const q = queries.subarray(n * dims, (n + 1) * dims)
        const exact = exactTop(matrix, dims, ids, q, 10)
        const approx = graph.search(q, 10)
        const want = new Set(exact.map((e) => e.id))
        found += approx.ids.filter((id) => want.has(id)).length
        approx.ids.forEach((id, i) => {
          const row = (id - 10_000) / 3
          let dot = 0
          for (let d = 0; d < dims; d++) dot += matrix[row * dims + d]! * q[d]!
          assert.approximately(approx.scores[i]!, dot, 1e-4)
        })
      }
      // HNSW is approximate; at this size and search breadth it misses (almost) nothing.
      assert.isAtLeast(found / 250, 0.98)
      // The graph is kept under its name (no temporary file left), and mapping it again answers the same.
      assert.deepStrictEqual(fs.readdirSync(dir), ["graph-test.usearch"])
      const kept = yield* openAnnGraph(file, dims, count)
      const q = queries.subarray(0, dims)
      assert.deepStrictEqual(kept?.search(q, 10).ids, graph.search(q, 10).ids)
      // A file that does not hold what the index holds is never used, and is removed.
      assert.isUndefined(yield* openAnnGraph(file, dims, count + 1))
      assert.deepStrictEqual(fs.readdirSync(dir), [])
    })
  )

  it.live("a build that cannot succeed fails typed and leaves no file", () =>
    Effect.gen(function* () {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-ann-"))
      // Three ids, but vectors for two and a half of them.
      const failed = yield* Effect.flip(
        buildAnnGraph({
          ids: Int32Array.of(1, 2, 3),
          matrix: new Float32Array(10),
          dims: 4,
          file: path.join(dir, "g.usearch")
        })
      )
      assert.instanceOf(failed, AnnBuildFailed)
      assert.deepStrictEqual(fs.readdirSync(dir), [])
    })
  )
})

/** Bag-of-words vectors with synonyms folded, and a distinct base per dimension (so no vector is flat). */
const fake = await serveFakeEmbeddings(
  ["phone", "network", "page", "install", "package", "build", "files", "cache", "proxy", "port"],
  (i) => 0.01 * (i + 1)
)

const root = fs.mkdtempSync(path.join(os.tmpdir(), "keel-gt-ann-"))
const topics = ["network", "install", "build", "cache", "proxy", "port"]
/** More than the 60 dense neighbours a question asks for, so a question scoped to them is answered by the graph. */
const GUIDES = 90
const guides = initRepo(root, "guides")
commitFiles(
  guides,
  Object.fromEntries(
    Array.from({ length: GUIDES }, (_, i) => {
      // Each guide's words differ in kind or in count, so no two vectors tie (ties may order either way).
      const topic = topics[i % topics.length]!
      const aside = `${topics[(i + 1) % topics.length]} `.repeat(Math.floor(i / topics.length))
      return [`guide/${topic}-${i}.md`, `# ${topic} ${i}\n\nNotes about the ${topic}, part ${i}. ${aside}\n`]
    })
  ),
  "guides"
)
const phones = initRepo(root, "phones")
commitFiles(phones, { "phone.md": "# Devices\n\nOpen the page on your phone over the network.\n" }, "phones")
const registry = initRepo(root, "registry")
commitFiles(
  registry,
  {
    "sources.yml": "version: 1\nsources:\n  - { name: guides, url: ../guides }\n  - { name: phones, url: ../phones }\n"
  },
  "registry"
)
const dataDir = path.join(root, "data")
const annDir = path.join(dataDir, "groundtruth", "ann")

// Temporary files of builds: one a crash left an hour ago, one another process may be writing right now.
const otherPid = spawnSync(process.execPath, ["-e", "0"]).pid
fs.mkdirSync(annDir, { recursive: true })
const crashed = path.join(annDir, `building-${otherPid}-aaaa-1-x.usearch`)
fs.writeFileSync(crashed, "partial")
fs.utimesSync(crashed, new Date(Date.now() - 3_600_000), new Date(Date.now() - 3_600_000))
const recent = `building-${otherPid}-bbbb-2-y.usearch`
fs.writeFileSync(path.join(annDir, recent), "partial")

const graphFiles = () => fs.readdirSync(annDir).filter((name) => name.startsWith("graph-"))
const statusOf = Retriever.use((r) => r.denseStatus)
const untilGraph = Effect.gen(function* () {
  // 3,600 polls: a bound on a hang (a loaded 2-core machine builds the graph many times slower), not a timing claim.
  for (let i = 0; i < 3_600; i++) {
    const status: DenseStatus = yield* statusOf
    if (status.search === "graph") return status
    yield* Effect.sleep("50 millis")
  }
  return yield* Effect.die(new Error("the graph was not ready within 3 min"))
})
const denseEnv = {
  GT_REGISTRY_REPO: registry,
  GT_EMBEDDINGS_URL: fake.url,
  GT_EMBEDDINGS_MODEL: "fake-ann",
  GT_ANN_MIN_VECTORS: "20"
}
/** The same effect against a second Retriever over the same index that never uses a graph: exact dense search. */
const exactly = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(
    Effect.provide(Retriever.Default.pipe(Layer.provide(GtConfig.Default))),
    Effect.withConfigProvider(
      ConfigProvider.fromMap(new Map(Object.entries({ ...denseEnv, GT_ANN_MIN_VECTORS: "1000000" })))
    )
  )
const questions = ["mobile", "proxy settings", "install the package", "cache build files", "network port"]
const ranking = (query: string, repos?: ReadonlyArray<string>) =>
  Retriever.use((r) => r.retrieve(query, { limit: 5, repos })).pipe(
    Effect.map((hits) => hits.map((h) => `${h.repo}/${h.path}:${h.line}`))
  )

layer(
  HttpTest({
    settings: { dataDir },
    env: denseEnv
  }),
  // excludeTestServices: the real clock, since the graph is built by a real worker thread.
  { timeout: "300 seconds", excludeTestServices: true }
)("dense search from GT_ANN_MIN_VECTORS vectors on", (it) => {
  it.effect("a crashed build's temporary file is removed when the service starts; a recent one is not", () =>
    Effect.sync(() => {
      assert.deepStrictEqual(fs.readdirSync(annDir), [recent])
      fs.rmSync(path.join(annDir, recent))
    })
  )

  it.effect("answers exactly until the graph is built in the background, then ranks the same through it", () =>
    Effect.gen(function* () {
      yield* Ingester.use((i) => i.ingest({}))
      const before = yield* statusOf
      assert.deepInclude(before, { vectors: GUIDES + 1, search: "exact", building: false, graphError: null })
      // The first question starts the build (and is answered exactly).
      const first = yield* ranking("mobile")
      assert.strictEqual(first[0], "phones/phone.md:1")
      const ready = yield* untilGraph
      assert.deepInclude(ready, { vectors: GUIDES + 1, search: "graph", graphError: null })
      assert.strictEqual(graphFiles().length, 1)
      const answered = ready.answered.graph
      for (const q of questions) assert.deepStrictEqual(yield* ranking(q), yield* exactly(ranking(q)))
      assert.strictEqual((yield* statusOf).answered.graph, answered + questions.length)
    })
  )

  it.effect("the index is read in pages, and reads the same vectors as in one", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const embedder = yield* Embedder
        const exactOnly = { annMinVectors: 1_000_000, annDir }
        const paged = yield* makeVectorIndex(sql, embedder, { ...exactOnly, pageRows: 7 })
        const whole = yield* makeVectorIndex(sql, embedder, { ...exactOnly, pageRows: 100_000 })
        for (const q of questions) {
          assert.deepStrictEqual(yield* paged.nearest(q, undefined, 60), yield* whole.nearest(q, undefined, 60))
          assert.deepStrictEqual(yield* paged.nearest(q, ["phones"], 5), yield* whole.nearest(q, ["phones"], 5))
        }
        assert.strictEqual((yield* paged.status).vectors, (yield* whole.status).vectors)
      })
    )
  )

  it.effect("the graph is kept: a service started again over the same index maps it instead of building", () =>
    Effect.gen(function* () {
      const restarted = yield* Effect.gen(function* () {
        const retriever = yield* Retriever
        assert.strictEqual((yield* retriever.denseStatus).search, "exact")
        yield* retriever.retrieve("mobile")
        return yield* retriever.denseStatus
      }).pipe(Effect.provide(Retriever.Default))
      assert.deepInclude(restarted, { vectors: GUIDES + 1, search: "graph", building: false })
    })
  )

  it.effect(
    "a scoped question keeps to its sources (the graph oversampled, exact search when too few are in scope)",
    () =>
      Effect.gen(function* () {
        assert.strictEqual((yield* statusOf).search, "graph")
        // One vector in scope: the oversampled graph finds too few, and exact search answers.
        const before = (yield* statusOf).answered
        assert.deepStrictEqual(yield* ranking("mobile", ["phones"]), ["phones/phone.md:1"])
        assert.deepStrictEqual((yield* statusOf).answered, { ...before, exact: before.exact + 1 })
        // Ninety in scope: the graph answers, as exact search would.
        for (const q of questions) {
          const inGuides = yield* ranking(q, ["guides"])
          assert.isAbove(inGuides.length, 0)
          assert.isTrue(inGuides.every((hit) => hit.startsWith("guides/")))
          assert.deepStrictEqual(inGuides, yield* exactly(ranking(q, ["guides"])))
        }
        assert.strictEqual((yield* statusOf).answered.graph, before.graph + questions.length)
      })
  )

  it.effect("a new index generation drops the old graph: exact again until its own graph is built", () =>
    Effect.gen(function* () {
      const before = graphFiles()
      commitFiles(phones, { "mobile.md": "# Mobile\n\nA phone on the network.\n" }, "more")
      yield* Ingester.use((i) => i.ingest({}))
      assert.deepInclude(yield* statusOf, { vectors: GUIDES + 2, search: "exact" })
      yield* ranking("mobile")
      assert.deepInclude(yield* untilGraph, { vectors: GUIDES + 2, search: "graph" })
      // The new generation's graph replaced the old one's on disk.
      assert.strictEqual(graphFiles().length, 1)
      assert.notDeepEqual(graphFiles(), before)
      assert.includeMembers(yield* ranking("mobile", ["phones"]), ["phones/phone.md:1", "phones/mobile.md:1"])
    })
  )

  it.effect("generations that follow each other quickly end with one graph, the last one's", () =>
    Effect.gen(function* () {
      const start = (yield* statusOf).vectors
      for (const n of [1, 2]) {
        yield* ranking("mobile") // starts (or restarts) a build for what is indexed now
        commitFiles(phones, { [`quick-${n}.md`]: `# Quick ${n}\n\nThe ${"phone ".repeat(n)}page.\n` }, `quick ${n}`)
        yield* Ingester.use((i) => i.ingest({}))
      }
      yield* ranking("mobile")
      assert.deepInclude(yield* untilGraph, { vectors: start + 2, search: "graph", graphError: null })
      assert.strictEqual(graphFiles().length, 1)
      for (const q of questions) assert.deepStrictEqual(yield* ranking(q), yield* exactly(ranking(q)))
    })
  )
})

const brokenData = path.join(root, "broken-data")
fs.mkdirSync(path.join(brokenData, "groundtruth"), { recursive: true })
// Where graph files would go is a file: every build fails.
fs.writeFileSync(path.join(brokenData, "groundtruth", "ann"), "not a directory")

layer(
  HttpTest({
    settings: { dataDir: brokenData },
    env: denseEnv
  }),
  { timeout: "300 seconds", excludeTestServices: true }
)("a graph that cannot be built", (it) => {
  it.effect("leaves dense search exact, says why once, and never fails a question", () =>
    Effect.gen(function* () {
      yield* Ingester.use((i) => i.ingest({}))
      const lines: Array<string> = []
      const logger = Logger.make(({ message }) => lines.push(JSON.stringify(message)))
      const logged = Effect.provide(Logger.replace(Logger.defaultLogger, logger))
      assert.include((yield* logged(ranking("mobile")))[0], "phones/")
      for (let i = 0; i < 100; i++) {
        if ((yield* statusOf).graphError !== null) break
        yield* Effect.sleep("50 millis")
      }
      const status = yield* statusOf
      assert.strictEqual(status.search, "exact")
      assert.include(status.graphError, "cannot create")
      // Further questions neither retry the build nor fail.
      assert.include((yield* logged(ranking("mobile")))[0], "phones/")
      assert.isFalse((yield* statusOf).building)
      yield* Effect.sleep("200 millis")
      assert.strictEqual(lines.filter((l) => l.includes("dense graph build failed")).length, 1)
    })
  )
})
