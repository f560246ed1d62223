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
const { usearchPath, config, ids, matrix, file } = workerData
try {
  const { Index } = require(usearchPath)
  const index = new Index(config)
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

/** The one index configuration, for the builder thread and for mapping what it built. */
const indexConfig = (dims: number) => {
  const { MetricKind, ScalarKind } = usearch()
  return {
    dimensions: dims,
    metric: MetricKind.IP,
    connectivity: ANN_SETTINGS.connectivity,
    expansion_add: ANN_SETTINGS.expansionAdd,
    expansion_search: ANN_SETTINGS.expansionSearch,
    quantization: ScalarKind.F32,
    multi: false
  }
}

const newIndex = (dims: number) => new (usearch().Index)(indexConfig(dims))

/**
 * Where the graph of one set of vectors is kept: named by `fingerprint` (a digest of the model, the chunk ids
 * and their content digests, see VectorIndex), so a restart over the same index finds its graph, and a graph
 * is never used for vectors it was not built from.
 */
export const annGraphFile = (dir: string, fingerprint: string) =>
  path.join(dir, `graph-${fingerprint.slice(0, 32)}-c${ANN_SETTINGS.connectivity}.usearch`)

/**
 * Maps a kept graph into this process (memory-mapped, not read: instant at any size). Absent, unreadable or
 * not holding `size` vectors of `dims` dimensions: undefined (an unusable file is removed), and the caller builds.
 */
export const openAnnGraph = (file: string, dims: number, size: number) =>
  Effect.sync((): AnnGraph | undefined => {
    try {
      if (!fs.existsSync(file)) return undefined
      const index = newIndex(dims)
      index.view(file)
      if (Number(index.size()) === size && Number(index.dimensions()) === dims) return graphOf(index)
    } catch {
      // Truncated, foreign or unreadable: built again.
    }
    removeQuietly(file)
    return undefined
  })

/** Best effort: a file that cannot be removed stays (a warning would say nothing the next build won't). */
const removeQuietly = (file: string) => {
  try {
    fs.rmSync(file, { force: true })
  } catch {
    // left in place
  }
}

/** This process's mark on its temporary files: a later process reusing the pid (PID 1 in a container) differs. */
const BOOT = Math.random().toString(36).slice(2, 10)

/** A temporary file this old is never a build in progress (one is written only in a build's last seconds). */
const STALE_TEMPORARY_MILLIS = 10 * 60_000

/**
 * Builds an HNSW graph (USearch) over `matrix` (row i is the unit vector of chunk `ids[i]`) in a worker
 * thread, into a temporary file renamed to `file` once complete (a crash never leaves a partial graph under
 * a graph's name), then maps it. Graphs in the directory older than this build — earlier generations — are
 * removed: a process still using one keeps its mapping.
 */
export const buildAnnGraph = (input: {
  readonly ids: Int32Array
  readonly matrix: Float32Array
  readonly dims: number
  readonly file: string
}) => {
  const dir = path.dirname(input.file)
  const startedAt = Date.now()
  const temp = path.join(
    dir,
    `building-${process.pid}-${BOOT}-${startedAt}-${Math.random().toString(36).slice(2)}.usearch`
  )
  return Effect.gen(function* () {
    yield* Effect.try({
      try: () => fs.mkdirSync(dir, { recursive: true }),
      catch: (error) => new AnnBuildFailed({ detail: `cannot create ${dir}: ${String(error)}` })
    })
    yield* Effect.async<void, AnnBuildFailed>((resume) => {
      let worker: Worker
      try {
        worker = new Worker(BUILDER, {
          eval: true,
          workerData: { usearchPath, config: indexConfig(input.dims), ids: input.ids, matrix: input.matrix, file: temp }
        })
      } catch (error) {
        resume(Effect.fail(new AnnBuildFailed({ detail: `cannot start the builder: ${String(error)}` })))
        return
      }
      worker.once("message", (reply: { ok: boolean; detail?: string }) => {
        resume(reply.ok ? Effect.void : Effect.fail(new AnnBuildFailed({ detail: reply.detail ?? "build failed" })))
        void worker.terminate()
      })
      worker.once("error", (error) => resume(Effect.fail(new AnnBuildFailed({ detail: error.message }))))
      worker.once("exit", (code) => resume(Effect.fail(new AnnBuildFailed({ detail: `builder exited (${code})` }))))
      return Effect.promise(() => worker.terminate())
    })
    yield* Effect.try({
      try: () => fs.renameSync(temp, input.file),
      catch: (error) => new AnnBuildFailed({ detail: `cannot keep the graph: ${String(error)}` })
    })
    const graph = yield* openAnnGraph(input.file, input.dims, input.ids.length)
    if (graph === undefined) return yield* new AnnBuildFailed({ detail: "the built graph could not be mapped" })
    yield* Effect.sync(() => {
      for (const name of safeList(dir)) {
        const other = path.join(dir, name)
        if (!name.startsWith("graph-") || other === input.file) continue
        // Only older ones: a newer graph is another process's newer generation.
        if (modifiedAt(other) < startedAt) removeQuietly(other)
      }
    })
    return graph
  }).pipe(Effect.ensuring(Effect.sync(() => removeQuietly(temp))))
}

const safeList = (dir: string) => {
  try {
    return fs.readdirSync(dir)
  } catch {
    return []
  }
}

const modifiedAt = (file: string) => {
  try {
    return fs.statSync(file).mtimeMs
  } catch {
    return Number.POSITIVE_INFINITY
  }
}

/**
 * Removes the temporary files of builds that cannot be running: ten minutes old (a build writes its file
 * in its last seconds), or left by an earlier process that had this process's pid.
 */
export const clearAnnLeftovers = (dir: string) =>
  Effect.sync(() => {
    for (const name of safeList(dir)) {
      const owner = /^building-(\d+)-([a-z0-9]+)-/.exec(name)
      if (owner === null) continue
      const file = path.join(dir, name)
      const earlierSelf = Number(owner[1]) === process.pid && owner[2] !== BOOT
      if (earlierSelf || Date.now() - modifiedAt(file) > STALE_TEMPORARY_MILLIS) removeQuietly(file)
    }
  })
