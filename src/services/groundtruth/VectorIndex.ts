import { createHash } from "node:crypto"
import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { type AnnGraph, annGraphFile, buildAnnGraph, clearAnnLeftovers, openAnnGraph } from "./AnnGraph.js"
import type { EmbedderShape } from "./Embedder.js"

interface Loaded {
  readonly key: string
  /** A digest of the model and every (chunk id, content digest): what a kept graph must have been built from. */
  readonly fingerprint: string
  readonly ids: Int32Array
  readonly repos: ReadonlyArray<string>
  readonly repoOf: Uint16Array
  /** Row of each chunk id in `matrix`. */
  readonly rowOf: ReadonlyMap<number, number>
  readonly dims: number
  readonly matrix: Float32Array
}

/** How dense search answers right now: exact brute force, or the graph of the current index generation. */
export interface DenseStatus {
  readonly vectors: number
  readonly search: "none" | "exact" | "graph"
  /** A graph build for the current generation is running (exact search meanwhile). */
  readonly building: boolean
  /** Why the current generation's graph could not be built (exact search instead), if it failed. */
  readonly graphError: string | null
}

/** A scoped search asks the graph for this many times `depth` neighbours, then keeps the scope's. */
const SCOPED_OVERSAMPLING = 8

/** The `depth` rows nearest `q` by dot product (exact), within the allowed repos when given. */
const exactNearest = (index: Loaded, q: Float32Array, allowed: ReadonlySet<number> | undefined, depth: number) => {
  const { matrix, dims } = index
  // A bounded min-heap would save little at this depth; a sorted top list is simpler and as fast here.
  const topIds: Array<number> = []
  const topScores: Array<number> = []
  for (let i = 0; i < index.ids.length; i++) {
    if (allowed !== undefined && !allowed.has(index.repoOf[i]!)) continue
    // Four running sums: the loop V8 compiles for this is about a quarter faster than one sum.
    let a = 0
    let b = 0
    let c = 0
    let e = 0
    const base = i * dims
    let d = 0
    for (; d + 3 < dims; d += 4) {
      a += matrix[base + d]! * q[d]!
      b += matrix[base + d + 1]! * q[d + 1]!
      c += matrix[base + d + 2]! * q[d + 2]!
      e += matrix[base + d + 3]! * q[d + 3]!
    }
    for (; d < dims; d++) a += matrix[base + d]! * q[d]!
    const dot = a + b + c + e
    if (topScores.length === depth && dot <= topScores[depth - 1]!) continue
    let at = topScores.length
    while (at > 0 && topScores[at - 1]! < dot) at--
    topScores.splice(at, 0, dot)
    topIds.splice(at, 0, index.ids[i]!)
    if (topScores.length > depth) {
      topScores.pop()
      topIds.pop()
    }
  }
  return topIds
}

/**
 * Dense search over every chunk's stored vector (unit length, so a dot product is the cosine), held in
 * memory as one float32 matrix and reloaded when an ingest changed the index. Small indexes are searched
 * exactly by brute force. From `annMinVectors` vectors on, an HNSW graph of the generation is mapped from
 * its file when one was kept for these very vectors, or built in a worker thread in the background (exact
 * search answers until it is ready, and whenever its build failed);
 * a scoped question oversamples the graph and falls back to exact search when too few neighbours are in
 * scope. A failing embedder at question time means no dense candidates, with a warning: the lexical
 * ranking answers alone.
 */
export const makeVectorIndex = (
  sql: SqlClient.SqlClient,
  embedder: EmbedderShape | "none",
  options: { readonly annMinVectors: number; readonly annDir: string }
) =>
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    yield* clearAnnLeftovers(options.annDir)
    let loaded: Loaded | undefined
    let graph: { readonly key: string; readonly graph: AnnGraph } | undefined
    let building: string | undefined
    let failed: { readonly key: string; readonly detail: string } | undefined

    const load = (model: string) =>
      Effect.gen(function* () {
        const stamp = yield* sql<{ a: number; b: number; n: number }>`
          SELECT coalesce(max(indexed_at), 0) AS a, coalesce(max(vectors_at), 0) AS b, count(*) AS n FROM gt_sources`
        const key = `${stamp[0]?.a}:${stamp[0]?.b}:${stamp[0]?.n}`
        if (loaded?.key === key) return loaded
        const rows = yield* sql<{ id: number; repo: string; digest: string; vector: Uint8Array }>`
          SELECT c.id, c.repo, c.digest, v.vector FROM gt_chunks c
          JOIN gt_vectors v ON v.digest = c.digest AND v.model = ${model} ORDER BY c.id`
        const dims = rows[0] === undefined ? 0 : rows[0].vector.byteLength / 4
        const usable = rows.filter((r) => r.vector.byteLength === dims * 4)
        const matrix = new Float32Array(usable.length * dims)
        const ids = new Int32Array(usable.length)
        const repos: Array<string> = []
        const repoIndex = new Map<string, number>()
        const repoOf = new Uint16Array(usable.length)
        const rowOf = new Map<number, number>()
        const fingerprint = createHash("sha256").update(`${model}\u0000${dims}\u0000`)
        usable.forEach((row, i) => {
          fingerprint.update(`${row.id}:${row.digest}\n`)
          const bytes = row.vector
          matrix.set(
            new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)),
            i * dims
          )
          ids[i] = Number(row.id)
          rowOf.set(ids[i]!, i)
          let r = repoIndex.get(row.repo)
          if (r === undefined) {
            r = repos.length
            repos.push(row.repo)
            repoIndex.set(row.repo, r)
          }
          repoOf[i] = r
        })
        loaded = { key, fingerprint: fingerprint.digest("hex"), ids, repos, repoOf, rowOf, dims, matrix }
        // The previous generation's graph may name deleted chunks and lacks new ones: exact until rebuilt.
        graph = undefined
        return loaded
      })

    /**
     * The graph of this generation: the one kept from an earlier build of the same vectors (by this process
     * or one before it), mapped at once; otherwise a build in the background, started once.
     */
    const ensureGraph = (index: Loaded) =>
      Effect.gen(function* () {
        if (index.ids.length < options.annMinVectors || graph?.key === index.key) return
        if (building === index.key || failed?.key === index.key) return
        const file = annGraphFile(options.annDir, index.fingerprint)
        const kept = yield* openAnnGraph(file, index.dims, index.ids.length)
        if (kept !== undefined) {
          graph = { key: index.key, graph: kept }
          return
        }
        building = index.key
        yield* buildAnnGraph({ ids: index.ids, matrix: index.matrix, dims: index.dims, file }).pipe(
          Effect.tap((built) =>
            Effect.sync(() => {
              if (loaded?.key === index.key) graph = { key: index.key, graph: built }
            })
          ),
          Effect.tapError((error) =>
            Effect.zipRight(
              Effect.sync(() => {
                failed = { key: index.key, detail: error.detail }
              }),
              Effect.logWarning("dense graph build failed; searching vectors exactly").pipe(
                Effect.annotateLogs("detail", error.detail)
              )
            )
          ),
          Effect.ignore,
          Effect.ensuring(
            Effect.sync(() => {
              if (building === index.key) building = undefined
            })
          ),
          Effect.forkIn(scope)
        )
      })

    /** The ids of the `depth` chunks nearest the question, within `scope` when given; [] without an embedder. */
    const nearest = (question: string, scopeRepos: ReadonlyArray<string> | undefined, depth: number) =>
      Effect.gen(function* () {
        if (embedder === "none") return [] as Array<number>
        const index = yield* load(embedder.model).pipe(Effect.orDie)
        if (index.ids.length === 0) return [] as Array<number>
        const embedded = yield* Effect.either(embedder.embed([question]))
        if (embedded._tag === "Left") {
          yield* Effect.logWarning("embeddings server failed; ranking this question lexically").pipe(
            Effect.annotateLogs("detail", embedded.left.detail)
          )
          return [] as Array<number>
        }
        const q = embedded.right[0]!
        if (q.length !== index.dims) {
          yield* Effect.logWarning("question vector size differs from the stored vectors; ranking lexically")
          return [] as Array<number>
        }
        yield* ensureGraph(index)
        const allowed = scopeRepos === undefined ? undefined : new Set(scopeRepos.map((r) => index.repos.indexOf(r)))
        const ready = graph?.key === index.key ? graph.graph : undefined
        if (ready === undefined) return exactNearest(index, q, allowed, depth)
        if (allowed === undefined) return ready.search(q, depth).ids
        const inScope = ready
          .search(q, Math.min(ready.size, depth * SCOPED_OVERSAMPLING))
          .ids.filter((id) => allowed.has(index.repoOf[index.rowOf.get(id) ?? -1] ?? -1))
        return inScope.length >= depth ? inScope.slice(0, depth) : exactNearest(index, q, allowed, depth)
      })

    /** What dense search would use for the current index (loads it; never embeds or starts a build). */
    const status: Effect.Effect<DenseStatus> = Effect.gen(function* () {
      if (embedder === "none") return { vectors: 0, search: "none", building: false, graphError: null } as const
      const index = yield* load(embedder.model).pipe(Effect.orDie)
      return {
        vectors: index.ids.length,
        search: graph?.key === index.key ? "graph" : "exact",
        building: building === index.key,
        graphError: failed?.key === index.key ? failed.detail : null
      } as const
    })

    return { nearest, status } as const
  })
