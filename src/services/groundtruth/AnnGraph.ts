import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { Worker } from "node:worker_threads"
import { Effect, Schema } from "effect"
import type { Index } from "usearch"

export class AnnBuildFailed extends Schema.TaggedError<AnnBuildFailed>()("AnnBuildFailed", {
  detail: Schema.String
}) {}

/** HNSW settings (USearch's names): links per node, candidate list while adding and while searching. */
export const ANN_SETTINGS = { connectivity: 16, expansionAdd: 128, expansionSearch: 128 } as const

// The CommonJS build: its native-module lookup uses __dirname; the ES build walks the call stack instead.
const usearchPath = createRequire(import.meta.url).resolve("usearch")
const usearch = () => createRequire(import.meta.url)(usearchPath) as typeof import("usearch")

/**
 * Runs in a worker thread: building the graph is seconds of CPU at 100k vectors (one core; the other keeps
 * serving), and USearch's calls are synchronous, so on the main thread they would stall every request.
 */
const BUILDER = `
const { parentPort, workerData } = require("node:worker_threads")
const { usearchPath, ids, matrix, dims, file, connectivity, expansionAdd, expansionSearch } = workerData
try {
  const { Index } = require(usearchPath)
  const index = new Index({ dimensions: dims, metric: "ip", connectivity, expansion_add: expansionAdd, expansion_search: expansionSearch })
  const keys = new BigUint64Array(ids.length)
  for (let i = 0; i < ids.length; i++) keys[i] = BigInt(ids[i])
  if (ids.length > 0) index.add(keys, matrix, 1)
  index.save(file)
  parentPort.postMessage({ ok: true })
} catch (error) {
  parentPort.postMessage({ ok: false, detail: String(error && error.message ? error.message : error) })
}
`

/** An approximate nearest-neighbour graph over unit vectors: inner product = cosine. */
export interface AnnGraph {
  readonly size: number
  /** Up to `k` ids, nearest first, with their cosine similarity. */
  readonly search: (query: Float32Array, k: number) => { readonly ids: Array<number>; readonly scores: Array<number> }
}

const graphOf = (index: Index): AnnGraph => ({
  size: Number(index.size()),
  search: (query, k) => {
    const matches = index.search(query, k, 1)
    const ids: Array<number> = []
    const scores: Array<number> = []
    for (let i = 0; i < matches.keys.length; i++) {
      ids.push(Number(matches.keys[i]!))
      // USearch's "ip" distance is 1 − dot.
      scores.push(1 - matches.distances[i]!)
    }
    return { ids, scores }
  }
})

/**
 * Builds an HNSW graph (USearch) over `matrix` (row i is the unit vector of chunk `ids[i]`) in a worker
 * thread, saves it under `dir` and maps it into this process (memory-mapped, then the file is unlinked:
 * the mapping outlives the name, and a crash leaves no index behind that could be mistaken for current).
 */
export const buildAnnGraph = (input: {
  readonly ids: Int32Array
  readonly matrix: Float32Array
  readonly dims: number
  readonly dir: string
}) => {
  const file = path.join(input.dir, `graph-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}.usearch`)
  return Effect.gen(function* () {
    yield* Effect.try({
      try: () => fs.mkdirSync(input.dir, { recursive: true }),
      catch: (error) => new AnnBuildFailed({ detail: `cannot create ${input.dir}: ${String(error)}` })
    })
    yield* Effect.async<void, AnnBuildFailed>((resume) => {
      const worker = new Worker(BUILDER, {
        eval: true,
        workerData: {
          usearchPath,
          ids: input.ids,
          matrix: input.matrix,
          dims: input.dims,
          file,
          ...ANN_SETTINGS
        }
      })
      worker.once("message", (reply: { ok: boolean; detail?: string }) => {
        resume(reply.ok ? Effect.void : Effect.fail(new AnnBuildFailed({ detail: reply.detail ?? "build failed" })))
        void worker.terminate()
      })
      worker.once("error", (error) => resume(Effect.fail(new AnnBuildFailed({ detail: error.message }))))
      worker.once("exit", (code) => resume(Effect.fail(new AnnBuildFailed({ detail: `builder exited (${code})` }))))
      return Effect.promise(() => worker.terminate())
    })
    return yield* Effect.try({
      try: () => {
        const { Index, MetricKind, ScalarKind } = usearch()
        const index = new Index({
          dimensions: input.dims,
          metric: MetricKind.IP,
          connectivity: ANN_SETTINGS.connectivity,
          expansion_add: ANN_SETTINGS.expansionAdd,
          expansion_search: ANN_SETTINGS.expansionSearch,
          quantization: ScalarKind.F32,
          multi: false
        })
        index.view(file)
        return graphOf(index)
      },
      catch: (error) => new AnnBuildFailed({ detail: `cannot map the graph: ${String(error)}` })
    })
  }).pipe(Effect.ensuring(Effect.sync(() => fs.rmSync(file, { force: true }))))
}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** Removes graph files that builds of processes no longer running left behind (they are never reused). */
export const clearAnnLeftovers = (dir: string) =>
  Effect.sync(() => {
    let names: Array<string>
    try {
      names = fs.readdirSync(dir)
    } catch {
      // No directory yet (or not one): nothing left behind; a build reports what is wrong with it.
      return
    }
    for (const name of names) {
      const pid = /^graph-(\d+)-.*\.usearch$/.exec(name)?.[1]
      if (pid !== undefined && !isAlive(Number(pid))) fs.rmSync(path.join(dir, name), { force: true })
    }
  })
