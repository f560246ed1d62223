import { createHash } from "node:crypto"
import type { SqlClient } from "@effect/sql"
import { Cause, Effect, Fiber, Option } from "effect"
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

/**
 * A turn of the event loop: other requests' I/O and timers run. (`Effect.yieldNow` only yields to other
 * fibers, which may all run before the event loop gets a turn.)
 */
const toEventLoop = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/** How dense search answers right now: exact brute force, or the graph of the current index generation. */
export interface DenseStatus {
  readonly vectors: number
  readonly search: "none" | "exact" | "graph"
  /** A graph build for the current generation is running (exact search meanwhile). */
  readonly building: boolean
  /** Why the current generation's graph could not be built (exact search instead), if it failed. */
  readonly graphError: string | null
  /** Questions answered so far by each way (since the service started). */
  readonly answered: { readonly exact: number; readonly graph: number }
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
  options: {
    readonly annMinVectors: number
    readonly annDir: string
    /** Vectors read per statement when the index is (re)loaded. */
    readonly pageRows?: number
  }
) =>
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    const pageRows = Math.max(1, options.pageRows ?? 1024)
    yield* clearAnnLeftovers(options.annDir)
    let loaded: Loaded | undefined
    // Graph, build and failure belong to a set of vectors (its fingerprint), not to a load: a reload that
    // finds the same vectors keeps its graph, and a graph never answers for vectors it was not built from.
    let graph: { readonly fingerprint: string; readonly graph: AnnGraph } | undefined
    // `fiber` is filled in right after the fork; a build that ends first has already cleared `building`.
    let building: { readonly fingerprint: string; fiber: Fiber.RuntimeFiber<void> | undefined } | undefined
    let failed: { readonly fingerprint: string; readonly detail: string } | undefined
    const answered = { exact: 0, graph: 0 }

    const stampKey = Effect.map(
      sql<{ a: number; b: number; n: number }>`
        SELECT coalesce(max(indexed_at), 0) AS a, coalesce(max(vectors_at), 0) AS b, count(*) AS n FROM gt_sources`,
      (stamp) => `${stamp[0]?.a}:${stamp[0]?.b}:${stamp[0]?.n}`
    )

    /**
     * Every stored vector of `model`, read in pages of `pageRows` with a yield between them: reading 100k
     * vectors takes seconds, and in one statement it would stall every other request of the process that long.
     */
    const readIndex = (model: string, key: string) =>
      Effect.gen(function* () {
        const ids: Array<number> = []
        const repoList: Array<string> = []
        const repoIndex = new Map<string, number>()
        const repoOfList: Array<number> = []
        const parts: Array<Float32Array> = []
        const fingerprint = createHash("sha256").update(`${model}\u0000`)
        let dims = 0
        let after = -1
        for (;;) {
          const page = yield* sql<{ id: number; repo: string; digest: string; vector: Uint8Array }>`
            SELECT c.id, c.repo, c.digest, v.vector FROM gt_chunks c
            JOIN gt_vectors v ON v.digest = c.digest AND v.model = ${model}
            WHERE c.id > ${after} ORDER BY c.id LIMIT ${pageRows}`
          if (dims === 0 && page[0] !== undefined) {
            dims = page[0].vector.byteLength / 4
            fingerprint.update(`${dims}\u0000`)
          }
          const usable = page.filter((row) => row.vector.byteLength === dims * 4)
          const matrix = new Float32Array(usable.length * dims)
          usable.forEach((row, i) => {
            fingerprint.update(`${row.id}:${row.digest}\n`)
            const bytes = row.vector
            // Copied out: a blob's bytes need not start at a multiple of 4 of their buffer.
            matrix.set(
              new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)),
              i * dims
            )
            ids.push(Number(row.id))
            let r = repoIndex.get(row.repo)
            if (r === undefined) {
              r = repoList.length
              repoList.push(row.repo)
              repoIndex.set(row.repo, r)
            }
            repoOfList.push(r)
          })
          parts.push(matrix)
          if (page.length < pageRows) break
          after = Number(page[page.length - 1]!.id)
          yield* toEventLoop
        }
        const matrix = new Float32Array(ids.length * dims)
        let at = 0
        for (const part of parts) {
          matrix.set(part, at)
          at += part.length
        }
        const rowOf = new Map(ids.map((id, i) => [id, i] as const))
        return {
          key,
          fingerprint: fingerprint.digest("hex"),
          ids: Int32Array.from(ids),
          repos: repoList,
          repoOf: Uint16Array.from(repoOfList),
          rowOf,
          dims,
          matrix
        } satisfies Loaded
      })

    // One reload at a time: questions arriving during a reload wait for it instead of reading everything again.
    const reloading = yield* Effect.makeSemaphore(1)

    const load = (model: string) =>
      Effect.gen(function* () {
        const key = yield* stampKey
        if (loaded?.key === key) return loaded
        return yield* reloading.withPermits(1)(
          Effect.gen(function* () {
            let current = yield* stampKey
            if (loaded?.key === current) return loaded
            // The pages are separate reads: an ingest committed between them shows as a new stamp, and the
            // index is read again (at most three times; then the last read serves, and the next question
            // finds the stamp moved and reads once more).
            let next = yield* readIndex(model, current)
            for (let attempt = 1; attempt < 3; attempt++) {
              const settled = yield* stampKey
              if (settled === current) break
              current = settled
              next = yield* readIndex(model, current)
            }
            loaded = next
            // A build for vectors that are no longer the index's is wasted work (and memory): stop it.
            if (building !== undefined && building.fingerprint !== next.fingerprint) {
              if (building.fiber !== undefined) yield* Fiber.interruptFork(building.fiber)
              building = undefined
            }
            return next
          })
        )
      })

    const recordFailure = (fingerprint: string, detail: string) =>
      Effect.zipRight(
        Effect.sync(() => {
          failed = { fingerprint, detail }
        }),
        Effect.logWarning("dense graph build failed; searching vectors exactly").pipe(
          Effect.annotateLogs("detail", detail)
        )
      )

    /**
     * The graph of these vectors: the one kept from an earlier build of the same vectors (by this process or
     * one before it), mapped at once; otherwise a build in the background, one at a time. Uninterruptible, so
     * a question cancelled here never leaves a build marked running that was not started.
     */
    const ensureGraph = (index: Loaded) =>
      Effect.uninterruptible(
        Effect.gen(function* () {
          const { fingerprint } = index
          if (index.ids.length < options.annMinVectors || graph?.fingerprint === fingerprint) return
          if (building?.fingerprint === fingerprint || failed?.fingerprint === fingerprint) return
          const file = annGraphFile(options.annDir, fingerprint)
          const kept = yield* openAnnGraph(file, index.dims, index.ids.length)
          if (kept !== undefined) {
            graph = { fingerprint, graph: kept }
            return
          }
          yield* clearAnnLeftovers(options.annDir)
          const token: { readonly fingerprint: string; fiber: Fiber.RuntimeFiber<void> | undefined } = {
            fingerprint,
            fiber: undefined
          }
          building = token
          token.fiber = yield* buildAnnGraph({ ids: index.ids, matrix: index.matrix, dims: index.dims, file }).pipe(
            Effect.flatMap((built) =>
              Effect.sync(() => {
                // A build that finished after the index moved on must not displace the newer set's graph.
                if (loaded?.fingerprint === fingerprint) graph = { fingerprint, graph: built }
              })
            ),
            Effect.catchAllCause((cause) =>
              Cause.isInterruptedOnly(cause)
                ? Effect.void
                : recordFailure(
                    fingerprint,
                    Option.match(Cause.failureOption(cause), {
                      onNone: () => Cause.pretty(cause).split("\n")[0] ?? "build failed",
                      onSome: (error) => error.detail
                    })
                  )
            ),
            Effect.ensuring(
              Effect.sync(() => {
                if (building === token) building = undefined
              })
            ),
            Effect.forkIn(scope)
          )
        })
      )

    /** The `depth` ids the graph finds nearest `q` within `allowed`; undefined when it cannot answer. */
    const throughGraph = (
      index: Loaded,
      ready: AnnGraph,
      q: Float32Array,
      allowed: ReadonlySet<number> | undefined,
      depth: number
    ) => {
      let found: ReadonlyArray<number>
      try {
        found = ready.search(q, Math.min(ready.size, allowed === undefined ? depth : depth * SCOPED_OVERSAMPLING)).ids
      } catch {
        return undefined
      }
      const kept: Array<number> = []
      for (const id of found) {
        const row = index.rowOf.get(id)
        if (row === undefined || (allowed !== undefined && !allowed.has(index.repoOf[row]!))) continue
        kept.push(id)
        if (kept.length === depth) break
      }
      // Too few in scope (a small source among big ones): that question is answered exactly.
      const needed = allowed === undefined ? Math.min(depth, index.ids.length) : depth
      return kept.length >= needed ? kept : undefined
    }

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
        const allowed =
          scopeRepos === undefined
            ? undefined
            : new Set(scopeRepos.map((r) => index.repos.indexOf(r)).filter((r) => r >= 0))
        const ready = graph?.fingerprint === index.fingerprint ? graph.graph : undefined
        const approximate = ready === undefined ? undefined : throughGraph(index, ready, q, allowed, depth)
        if (approximate !== undefined) {
          answered.graph++
          return approximate
        }
        answered.exact++
        return exactNearest(index, q, allowed, depth)
      })

    /** What dense search would use for the current index (loads it; never embeds or starts a build). */
    const status: Effect.Effect<DenseStatus> = Effect.gen(function* () {
      if (embedder === "none") {
        return { vectors: 0, search: "none", building: false, graphError: null, answered: { ...answered } } as const
      }
      const index = yield* load(embedder.model).pipe(Effect.orDie)
      return {
        vectors: index.ids.length,
        search: graph?.fingerprint === index.fingerprint ? "graph" : "exact",
        building: building?.fingerprint === index.fingerprint,
        graphError: failed?.fingerprint === index.fingerprint ? failed.detail : null,
        answered: { ...answered }
      } as const
    })

    return { nearest, status } as const
  })
