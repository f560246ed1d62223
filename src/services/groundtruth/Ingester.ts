import { SqlClient } from "@effect/sql"
import { Clock, Data, Effect, Either } from "effect"
import { Minimatch } from "minimatch"
import {
  SourceDisabled,
  SourceRegistryNotConfigured,
  SourceRegistryRefused,
  SourceRegistryUnavailable,
  UnknownRef,
  UnknownRepo
} from "../../contracts/groundtruth/Errors.js"
import { IngestResult, type SourceIngest } from "../../contracts/groundtruth/Ingest.js"
import { sha256Hex } from "../platform/Digest.js"
import { displayUrl, GitMirror, redactUrls, type TreeEntry } from "../platform/GitMirror.js"
import { shortened } from "../platform/Validation.js"
import { type Chunk, chunkFile, isBinary } from "./Chunker.js"
import { Embedder } from "./Embedder.js"
import { GtConfig } from "./GtConfig.js"
import { type Registry, type Source, Sources } from "./Sources.js"
import { type FrequencyCounter, frequencyCounter, words } from "./Terms.js"
import { TextSearch } from "./TextSearch.js"

/** The refusal of a name no source has; the name is echoed at most 200 characters long (it is the caller's text). */
export const unknownRepo = (repo: string, where = "") => {
  const shown = shortened(repo, 200)
  return new UnknownRepo({ repo: shown, detail: `no source named ${shown}${where}` })
}

/**
 * What the ingester fails with when the registry could not be fetched and none was ever accepted: with git's own
 * reason (credentials taken out), for a caller on this machine — `ctl gt ingest` has no server log to point to.
 * Over HTTP it is answered as `SourceRegistryUnavailable`, whose detail leaves the reason in the server log.
 */
export class SourceRegistryUnreachable extends Data.TaggedError("SourceRegistryUnreachable")<{
  readonly code: "REGISTRY_UNAVAILABLE"
  readonly detail: string
}> {
  static because(reason: string) {
    return new SourceRegistryUnreachable({
      code: "REGISTRY_UNAVAILABLE",
      detail: `the source registry could not be fetched, and none was ever accepted (${reason}); try again`
    })
  }

  /** The answer to an HTTP client: the reason is in the server's log, not in the answer. */
  get overHttp() {
    return new SourceRegistryUnavailable({
      code: "REGISTRY_UNAVAILABLE",
      detail:
        "the source registry could not be fetched (git's reason is in the server log), and none was ever accepted; try again"
    })
  }
}

const notConfigured = new SourceRegistryNotConfigured({
  code: "REGISTRY_NOT_CONFIGURED",
  detail:
    "no source registry is configured: set GT_REGISTRY_REPO to the git URL or path of a repository holding sources.yml " +
    "(docs/groundtruth.md, Sources); the first start of a server with demo data creates one naming Keel's own docs"
})

/** "sources.yml sources.0.trust: is not a tier; sources.yml version: …" → [{path, message}]. */
export const registryProblems = (detail: string) =>
  detail.split("; ").map((part) => {
    const match = /^sources\.yml(?: ([^:\s]*))?: (.*)$/s.exec(part)
    return match === null ? { path: "", message: part } : { path: match[1] ?? "", message: match[2] ?? part }
  })

export interface IngestProgress {
  readonly repo: string
  readonly done: number
  readonly total: number
}

/**
 * Globs are minimatch globs on repo-relative paths: `*` skips dotfiles, a pattern without `/` matches
 * at the root. Compiled once per source, not once per file.
 */
export const selector = (source: Pick<Source, "include" | "exclude">) => {
  const include = source.include.map((glob) => new Minimatch(glob))
  const exclude = source.exclude.map((glob) => new Minimatch(glob))
  return (file: string) => include.some((m) => m.match(file)) && !exclude.some((m) => m.match(file))
}

export const selects = (source: Pick<Source, "include" | "exclude">, file: string) => selector(source)(file)

/** Bumped when chunking changes, so the next ingest re-chunks every file instead of only changed ones. */
const CHUNKER_VERSION = 5

/**
 * What decides a source's chunks besides its files: its globs, the chunker, and the settings it runs with
 * (window size, overlap, the size limit). Any change re-reads every file, so one index never mixes two.
 */
const selectionSignature = (
  source: Source,
  settings: { readonly chunkMaxLines: number; readonly chunkOverlapLines: number; readonly maxFileBytes: number }
) =>
  sha256Hex(
    JSON.stringify([
      source.include,
      source.exclude,
      CHUNKER_VERSION,
      settings.chunkMaxLines,
      settings.chunkOverlapLines,
      settings.maxFileBytes
    ])
  ).slice(0, 16)

/** A path's words ("docs/Reference/Server.md" → "docs reference server md"): indexed, never shown. */
const pathWords = (file: string) => words(file.replace(/[/\\]/g, " ")).join(" ")

/** What a chunk's vector is computed from; its digest keys the stored vector. */
export const embeddingText = (file: string, heading: string, content: string) =>
  `${file}${heading === "" ? "" : `\n${heading}`}\n${content}`

const EMBED_BATCH = 256

/** What one ingest of a source reads (the selected files, or the changed ones) and which paths' chunks it drops. */
interface IndexPlan {
  readonly full: boolean
  readonly toIndex: ReadonlyArray<TreeEntry>
  readonly toDelete: ReadonlyArray<string>
}

interface ChunkedFile {
  readonly path: string
  readonly chunks: ReadonlyArray<Chunk>
}

const INSERT_BATCH = 400

/**
 * Ingests sources through real git: a bare mirror per source, files listed and read at the resolved
 * commit, selected by globs, chunked with exact line numbers. Re-ingest touches only files changed
 * since the indexed commit, and swaps a source's index in one transaction, so a search sees the old
 * commit or the new one, never a mix. A source that fails keeps its previous index.
 */
export class Ingester extends Effect.Service<Ingester>()("groundtruth/Ingester", {
  effect: Effect.gen(function* () {
    const config = yield* GtConfig
    const sources = yield* Sources
    const sql = yield* SqlClient.SqlClient
    const embedder = yield* Embedder
    const textSearch = yield* TextSearch
    // One ingest at a time per process: two at once raced on the same git mirrors (a clone into a
    // directory the other was creating, a ref lock held by the other's fetch) and read every file twice.
    const oneAtATime = yield* Effect.makeSemaphore(1)

    /** Document frequencies move with the chunks: one upsert per stem, rows at zero removed. */
    const applyFrequencies = (frequencies: FrequencyCounter) =>
      Effect.gen(function* () {
        const entries = frequencies.changes()
        for (let i = 0; i < entries.length; i += INSERT_BATCH) {
          yield* sql`INSERT INTO gt_terms ${sql.insert(entries.slice(i, i + INSERT_BATCH))}
            ON CONFLICT (stem) DO UPDATE SET df = gt_terms.df + excluded.df`
        }
        yield* sql`DELETE FROM gt_terms WHERE df <= 0`
      })

    type IndexedRow = {
      readonly id: number
      readonly heading: string
      readonly content: string
      readonly terms: string
    }

    /** A chunk's stems counted into (or out of) the document frequencies. */
    const tally = (frequencies: FrequencyCounter, row: Omit<IndexedRow, "id">, by: 1 | -1) =>
      frequencies.add(`${row.heading}\n${row.content}\n${row.terms}`, by)

    /** Deletes indexed chunks (and their full-text rows), counting their stems out of `frequencies`. */
    const dropChunks = (stale: ReadonlyArray<IndexedRow>, frequencies: FrequencyCounter) =>
      Effect.gen(function* () {
        for (const row of stale) tally(frequencies, row, -1)
        const ids = stale.map((r) => r.id)
        for (let i = 0; i < ids.length; i += INSERT_BATCH) {
          const batch = ids.slice(i, i + INSERT_BATCH)
          yield* textSearch.remove(batch)
          yield* sql`DELETE FROM gt_chunks WHERE ${sql.in("id", batch)}`
        }
      })

    /**
     * The registry decides what is served: the index of a source that left the registry, or is disabled
     * there, is dropped (its chunks, their document frequencies, its row), each in one transaction.
     */
    const retireSources = (registry: Registry) =>
      Effect.gen(function* () {
        const live = new Set(registry.sources.filter((s) => s.enabled).map((s) => s.name))
        const indexed = yield* sql<{ name: string }>`SELECT name FROM gt_sources ORDER BY name`
        const retired = indexed.map((r) => r.name).filter((name) => !live.has(name))
        for (const name of retired) {
          yield* Effect.gen(function* () {
            const frequencies = frequencyCounter()
            const stale = yield* sql<IndexedRow>`SELECT id, heading, content, terms FROM gt_chunks WHERE repo = ${name}`
            yield* dropChunks(stale, frequencies)
            yield* applyFrequencies(frequencies)
            yield* sql`DELETE FROM gt_sources WHERE name = ${name}`
          }).pipe(sql.withTransaction)
          yield* Effect.logInfo("source no longer enabled in the registry; its index was dropped").pipe(
            Effect.annotateLogs({ repo: name })
          )
        }
        return retired
      }).pipe(Effect.orDie)

    /** Vectors for this source's chunks that have none for the embedder's model (new or changed ones). */
    const embedMissing = (repo: string) =>
      Effect.gen(function* () {
        if (embedder === "none") return { computed: 0, error: null }
        const missing = yield* sql<{ digest: string; path: string; heading: string; content: string }>`
          SELECT c.digest, min(c.path) AS path, min(c.heading) AS heading, min(c.content) AS content
          FROM gt_chunks c LEFT JOIN gt_vectors v ON v.digest = c.digest AND v.model = ${embedder.model}
          WHERE c.repo = ${repo} AND v.digest IS NULL GROUP BY c.digest`
        let computed = 0
        for (let i = 0; i < missing.length; i += EMBED_BATCH) {
          const batch = missing.slice(i, i + EMBED_BATCH)
          const vectors = yield* Effect.either(
            embedder.embed(batch.map((row) => embeddingText(row.path, row.heading, row.content)))
          )
          if (vectors._tag === "Left") {
            yield* Effect.logWarning(
              "embeddings server failed; these chunks are searchable lexically until the next ingest"
            ).pipe(
              Effect.annotateLogs({ repo, detail: vectors.left.detail, without_vector: missing.length - computed })
            )
            return { computed, error: vectors.left.detail }
          }
          const rows = batch.map((row, j) => ({
            digest: row.digest,
            model: embedder.model,
            vector: new Uint8Array(vectors.right[j]!.buffer.slice(0))
          }))
          // The row is the key and the vector (no other column), so updating the vector is what REPLACE did.
          yield* sql`INSERT INTO gt_vectors ${sql.insert(rows)}
            ON CONFLICT (digest, model) DO UPDATE SET vector = excluded.vector`
          computed += rows.length
        }
        return { computed, error: null as string | null }
      })

    /** The source's mirror, synced, and the commit to index; an explicit ref that names nothing is the caller's error. */
    const prepare = (source: Source, ref: string | undefined) =>
      Effect.gen(function* () {
        const dir = yield* GitMirror.sync(source.url, config.mirrorsDir)
        const commit = yield* GitMirror.resolve(dir, ref ?? source.branch).pipe(
          Effect.mapError((error) =>
            ref === undefined
              ? error
              : new UnknownRef({
                  code: "UNKNOWN_REF",
                  repo: source.name,
                  path: "ref",
                  detail: `ref ${ref} names no commit of ${source.name}`
                })
          )
        )
        return { dir, commit }
      })

    /** A source that could not be ingested: its previous index keeps serving, the answer says why. */
    const failedSource = (source: Source, detail: string) =>
      Effect.gen(function* () {
        yield* Effect.logWarning("source ingest failed; its previous index keeps serving").pipe(
          Effect.annotateLogs({ repo: source.name, url: displayUrl(source.url), detail: redactUrls(detail) })
        )
        const prior = yield* sql<{
          indexed_commit: string
        }>`SELECT indexed_commit FROM gt_sources WHERE name = ${source.name}`.pipe(Effect.orDie)
        return {
          repo: source.name,
          commit: null,
          previous_commit: prior[0]?.indexed_commit ?? null,
          files_indexed: 0,
          files_deleted: 0,
          files_skipped: 0,
          skipped: { binary: 0, too_large: 0, symlink: 0, not_a_file: 0 },
          chunks: 0,
          vectors_computed: 0,
          embedding_error: null,
          duration_ms: 0,
          error: redactUrls(detail)
        } satisfies SourceIngest
      })

    /** The files of the tree at `commit` that the source's globs select, and what the globs selected but cannot index. */
    const selectFiles = (source: Source, dir: string, commit: string) =>
      Effect.gen(function* () {
        const entries = yield* GitMirror.listFiles(dir, commit)
        const isSelected = selector(source)
        const selected = new Map<string, TreeEntry>()
        const skipped = { too_large: 0, symlink: 0, not_a_file: 0 }
        for (const entry of entries) {
          if (!isSelected(entry.path)) continue
          if (entry.mode === "120000") skipped.symlink++
          else if (entry.type !== "blob") skipped.not_a_file++
          else if ((entry.size ?? 0) > config.maxFileBytes) skipped.too_large++
          else selected.set(entry.path, entry)
        }
        return { selected, skipped }
      })

    /**
     * What to read and what to drop: incremental (changed files, and changed or deleted ones dropped) when the same
     * globs were indexed at a commit this mirror still has; else everything selected, replacing the whole index.
     */
    const planIndex = (
      previous: { readonly indexed_commit: string; readonly selection: string } | undefined,
      signature: string,
      dir: string,
      commit: string,
      selected: ReadonlyMap<string, TreeEntry>
    ) =>
      Effect.gen(function* () {
        if (previous !== undefined && previous.selection === signature) {
          const diff = yield* Effect.either(GitMirror.diff(dir, previous.indexed_commit, commit))
          if (diff._tag === "Right") {
            const toIndex = diff.right.changed.flatMap((file) => {
              const entry = selected.get(file)
              return entry === undefined ? [] : [entry]
            })
            return {
              full: false,
              toIndex,
              toDelete: [...diff.right.changed, ...diff.right.deleted]
            } satisfies IndexPlan
          }
        }
        return { full: true, toIndex: [...selected.values()], toDelete: [] } satisfies IndexPlan
      })

    /** The planned files read at the commit and chunked, with how many were binary; progress every 50 files. */
    const chunkFiles = (
      source: Source,
      dir: string,
      toIndex: ReadonlyArray<TreeEntry>,
      onProgress: (p: IngestProgress) => Effect.Effect<void>
    ) =>
      Effect.gen(function* () {
        const blobs = yield* GitMirror.readBlobs(dir, [...new Set(toIndex.map((e) => e.sha))])
        const files: Array<ChunkedFile> = []
        let binary = 0
        let done = 0
        for (const entry of toIndex) {
          const bytes = blobs.get(entry.sha)
          if (bytes === undefined || isBinary(bytes)) binary++
          else
            files.push({
              path: entry.path,
              chunks: chunkFile(entry.path, bytes.toString("utf8"), {
                maxLines: config.chunkMaxLines,
                overlapLines: config.chunkOverlapLines
              })
            })
          done++
          if (done % 50 === 0 || done === toIndex.length)
            yield* onProgress({ repo: source.name, done, total: toIndex.length })
        }
        return { files, binary }
      })

    /** A file's chunks as index rows, cited at `commit`, with the path's words among the searchable terms. */
    const chunkRows = (source: Source, commit: string, files: ReadonlyArray<ChunkedFile>) =>
      files.flatMap((file) => {
        const fileWords = pathWords(file.path)
        return file.chunks.map((chunk) => ({
          repo: source.name,
          path: file.path,
          commit_sha: commit,
          line: chunk.line,
          end_line: chunk.endLine,
          heading: chunk.heading,
          content: chunk.content,
          terms: chunk.terms === "" ? fileWords : `${fileWords} ${chunk.terms}`,
          digest: sha256Hex(embeddingText(file.path, chunk.heading, chunk.content))
        }))
      })

    /** Inserts chunk rows and their full-text rows, in batches. */
    const insertChunks = (rows: ReadonlyArray<ReturnType<typeof chunkRows>[number]>) =>
      Effect.gen(function* () {
        for (let i = 0; i < rows.length; i += INSERT_BATCH) {
          const batch = rows.slice(i, i + INSERT_BATCH)
          const inserted = yield* sql<{ id: number }>`INSERT INTO gt_chunks ${sql.insert(batch)} RETURNING id`
          yield* textSearch.index(
            inserted.map((row, j) => ({
              id: row.id,
              heading: batch[j]?.heading ?? "",
              content: batch[j]?.content ?? "",
              terms: batch[j]?.terms ?? ""
            }))
          )
        }
      })

    /**
     * The swap, in one transaction: the planned files' old chunks out, their new ones in, every chunk cited at the
     * new commit, the document frequencies and the source's row updated. Answers the chunks written and the files
     * whose chunks left the index.
     */
    const swapIndex = (
      source: Source,
      commit: string,
      signature: string,
      plan: IndexPlan,
      selected: ReadonlyMap<string, TreeEntry>,
      files: ReadonlyArray<ChunkedFile>,
      now: number
    ) =>
      Effect.gen(function* () {
        type StaleRow = IndexedRow & { readonly path: string }
        const stale = plan.full
          ? yield* sql<StaleRow>`SELECT id, path, heading, content, terms FROM gt_chunks WHERE repo = ${source.name}`
          : yield* sql<StaleRow>`SELECT id, path, heading, content, terms FROM gt_chunks
              WHERE repo = ${source.name} AND ${sql.in("path", plan.toDelete.length > 0 ? plan.toDelete : [""])}`
        // Files whose chunks leave the index (deleted, renamed away, unselected, grown too large): counted only
        // when they had chunks — a new file the globs never select was never in the index to leave it.
        const unselected = new Set<string>()
        for (const row of stale) if (!selected.has(row.path)) unselected.add(row.path)
        const frequencies = frequencyCounter()
        yield* dropChunks(stale, frequencies)
        const rows = chunkRows(source, commit, files)
        for (const row of rows) tally(frequencies, row, 1)
        yield* insertChunks(rows)
        // Unchanged files are identical at the new commit: cite it for every chunk, so no search ever
        // sees one source at two commits.
        yield* sql`UPDATE gt_chunks SET commit_sha = ${commit} WHERE repo = ${source.name} AND commit_sha <> ${commit}`
        const total = yield* sql<{ n: number }>`SELECT count(*) AS n FROM gt_chunks WHERE repo = ${source.name}`
        const count = Number(total[0]?.n ?? 0)
        yield* applyFrequencies(frequencies)
        yield* sql`INSERT INTO gt_sources (name, indexed_commit, indexed_at, selection, chunks)
          VALUES (${source.name}, ${commit}, ${now}, ${signature}, ${count})
          ON CONFLICT (name) DO UPDATE SET indexed_commit = excluded.indexed_commit, indexed_at = excluded.indexed_at,
            selection = excluded.selection, chunks = excluded.chunks`
        return { chunks: rows.length, unselected }
      }).pipe(sql.withTransaction)

    /** One source at its prepared commit: select, plan, read and chunk, swap in one transaction, then embed. */
    const ingestSource = (
      source: Source,
      prepared: { readonly dir: string; readonly commit: string },
      onProgress: (p: IngestProgress) => Effect.Effect<void>
    ) =>
      Effect.gen(function* () {
        const started = yield* Clock.currentTimeMillis
        const indexed = yield* sql<{ indexed_commit: string; selection: string }>`
          SELECT indexed_commit, selection FROM gt_sources WHERE name = ${source.name}`
        const previous = indexed[0]
        const { dir, commit } = prepared
        const signature = selectionSignature(source, config)
        const { selected, skipped: unusable } = yield* selectFiles(source, dir, commit)
        const plan = yield* planIndex(previous, signature, dir, commit, selected)
        const { files, binary } = yield* chunkFiles(source, dir, plan.toIndex, onProgress)
        const skipped = { binary, ...unusable }
        const now = yield* Clock.currentTimeMillis
        const swapped = yield* swapIndex(source, commit, signature, plan, selected, files, now)
        const vectors = yield* embedMissing(source.name)
        if (vectors.computed > 0) {
          const at = yield* Clock.currentTimeMillis
          yield* sql`UPDATE gt_sources SET vectors_at = ${at} WHERE name = ${source.name}`
        }
        const finished = yield* Clock.currentTimeMillis
        return {
          repo: source.name,
          commit,
          previous_commit: previous?.indexed_commit ?? null,
          files_indexed: files.length,
          files_deleted: swapped.unselected.size,
          files_skipped: skipped.binary + skipped.too_large + skipped.symlink + skipped.not_a_file,
          skipped,
          chunks: swapped.chunks,
          vectors_computed: vectors.computed,
          embedding_error: vectors.error,
          duration_ms: finished - started,
          error: null
        } satisfies SourceIngest
      }).pipe(
        Effect.catchAll((error) =>
          failedSource(source, error._tag === "GitFailed" ? error.detail : `database: ${error.message}`)
        )
      )

    /** Every enabled source, or the one named; at its branch, or at `ref`. */
    const ingestNow = Effect.fn("Ingester.ingest")(function* (
      request: { readonly repo?: string | undefined; readonly ref?: string | undefined },
      onProgress: (p: IngestProgress) => Effect.Effect<void>
    ) {
      const registry = yield* sources.load()
      if (registry.configured === false) return yield* notConfigured
      if (registry.commit === null && registry.refused !== null && registry.unreachable === true) {
        return yield* SourceRegistryUnreachable.because(registry.refused)
      }
      if (registry.commit === null && registry.refused !== null) {
        return yield* new SourceRegistryRefused({
          code: "REGISTRY_REFUSED",
          detail: `the source registry is refused and none was ever accepted: ${registry.refused}`,
          fields: registryProblems(registry.refused)
        })
      }
      let chosen: ReadonlyArray<Source>
      if (request.repo !== undefined) {
        const source = registry.sources.find((s) => s.name === request.repo)
        if (source === undefined) {
          return yield* unknownRepo(request.repo, " in the registry")
        }
        if (!source.enabled) {
          return yield* new SourceDisabled({
            code: "SOURCE_DISABLED",
            repo: source.name,
            detail: `source ${source.name} is disabled in the registry${source.kind === "transcript" ? " (a transcript is disabled unless enabled: true)" : ""}`
          })
        }
        chosen = [source]
      } else {
        chosen = registry.sources.filter((s) => s.enabled)
      }
      // Every mirror synced and every ref resolved before any index changes: a ref that names nothing
      // refuses the whole request, with no source half-ingested.
      const prepared: Array<Either.Either<{ dir: string; commit: string }, string>> = []
      for (const source of chosen) {
        const attempt = yield* Effect.either(prepare(source, request.ref))
        if (attempt._tag === "Left" && attempt.left._tag === "UnknownRef") return yield* attempt.left
        prepared.push(Either.mapLeft(attempt, (error) => (error._tag === "GitFailed" ? error.detail : "")))
      }
      // Only a registry this load accepted retires anything: the one kept in force after a refusal was already
      // applied when it was accepted (and re-read under changed settings it may list nothing at all).
      const removed = registry.commit !== null && registry.refused === null ? yield* retireSources(registry) : []
      const results: Array<SourceIngest> = []
      for (const [i, source] of chosen.entries()) {
        const ready = prepared[i]!
        results.push(
          yield* Either.isRight(ready)
            ? ingestSource(source, ready.right, onProgress)
            : failedSource(source, ready.left)
        )
      }
      return new IngestResult({
        registry_commit: registry.commit,
        registry_refused: registry.refused,
        sources: results,
        sources_removed: removed
      })
    })

    const ingest = (
      request: { readonly repo?: string | undefined; readonly ref?: string | undefined },
      onProgress: (p: IngestProgress) => Effect.Effect<void> = () => Effect.void
    ) => oneAtATime.withPermits(1)(ingestNow(request, onProgress))

    return { ingest } as const
  })
}) {}
