import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { EmbedderShape } from "./Embedder.js"

interface Loaded {
  readonly key: string
  readonly ids: Int32Array
  readonly repos: ReadonlyArray<string>
  readonly repoOf: Uint16Array
  readonly dims: number
  readonly matrix: Float32Array
}

/**
 * Brute-force cosine search over every chunk's stored vector (unit length, so a dot product), held in
 * memory as one float32 matrix and reloaded when an ingest changed the index. A failing embedder at
 * question time means no dense candidates, with a warning: the lexical ranking answers alone.
 */
export const makeVectorIndex = (sql: SqlClient.SqlClient, embedder: EmbedderShape | "none") => {
  let loaded: Loaded | undefined

  const load = (model: string) =>
    Effect.gen(function* () {
      const stamp = yield* sql<{ a: number; b: number; n: number }>`
        SELECT coalesce(max(indexed_at), 0) AS a, coalesce(max(vectors_at), 0) AS b, count(*) AS n FROM gt_sources`
      const key = `${stamp[0]?.a}:${stamp[0]?.b}:${stamp[0]?.n}`
      if (loaded?.key === key) return loaded
      const rows = yield* sql<{ id: number; repo: string; vector: Uint8Array }>`
        SELECT c.id, c.repo, v.vector FROM gt_chunks c
        JOIN gt_vectors v ON v.digest = c.digest AND v.model = ${model}`
      const dims = rows[0] === undefined ? 0 : rows[0].vector.byteLength / 4
      const usable = rows.filter((r) => r.vector.byteLength === dims * 4)
      const matrix = new Float32Array(usable.length * dims)
      const ids = new Int32Array(usable.length)
      const repos: Array<string> = []
      const repoIndex = new Map<string, number>()
      const repoOf = new Uint16Array(usable.length)
      usable.forEach((row, i) => {
        const bytes = row.vector
        matrix.set(
          new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)),
          i * dims
        )
        ids[i] = Number(row.id)
        let r = repoIndex.get(row.repo)
        if (r === undefined) {
          r = repos.length
          repos.push(row.repo)
          repoIndex.set(row.repo, r)
        }
        repoOf[i] = r
      })
      loaded = { key, ids, repos, repoOf, dims, matrix }
      return loaded
    })

  /** The ids of the `depth` chunks nearest the question, within `scope` when given; [] without an embedder. */
  const nearest = (question: string, scope: ReadonlyArray<string> | undefined, depth: number) =>
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
      const allowed = scope === undefined ? undefined : new Set(scope.map((r) => index.repos.indexOf(r)))
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
    })

  return { nearest } as const
}
