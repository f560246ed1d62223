import { HttpApiSchema } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Schema } from "effect"
import { Minimatch } from "minimatch"
import { sha256Hex } from "../platform/Digest.js"
import { GitMirror, stripCredentials, type TreeEntry } from "../platform/GitMirror.js"
import { type Chunk, chunkFile, isBinary } from "./Chunker.js"
import { GtConfig } from "./GtConfig.js"
import { type Source, Sources } from "./Sources.js"

export class UnknownRepo extends Schema.TaggedError<UnknownRepo>()(
  "UnknownRepo",
  { repo: Schema.String, detail: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}

export const SourceIngest = Schema.Struct({
  repo: Schema.String,
  commit: Schema.NullOr(Schema.String),
  previous_commit: Schema.NullOr(Schema.String),
  files_indexed: Schema.Int,
  files_deleted: Schema.Int,
  files_skipped: Schema.Int,
  skipped: Schema.Struct({ binary: Schema.Int, too_large: Schema.Int, symlink: Schema.Int, not_a_file: Schema.Int }),
  chunks: Schema.Int,
  duration_ms: Schema.Int,
  error: Schema.NullOr(Schema.String)
})
export type SourceIngest = typeof SourceIngest.Type

export class IngestResult extends Schema.Class<IngestResult>("IngestResult")({
  registry_commit: Schema.NullOr(Schema.String),
  registry_refused: Schema.NullOr(Schema.String),
  sources: Schema.Array(SourceIngest)
}) {}

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

const selectionSignature = (source: Source) => sha256Hex(JSON.stringify([source.include, source.exclude])).slice(0, 16)

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

    const ingestSource = (
      source: Source,
      ref: string | undefined,
      onProgress: (p: IngestProgress) => Effect.Effect<void>
    ) =>
      Effect.gen(function* () {
        const started = yield* Clock.currentTimeMillis
        const skipped = { binary: 0, too_large: 0, symlink: 0, not_a_file: 0 }
        const indexed = yield* sql<{ indexed_commit: string; selection: string }>`
          SELECT indexed_commit, selection FROM gt_sources WHERE name = ${source.name}`
        const previous = indexed[0]
        const dir = yield* GitMirror.sync(source.url, config.mirrorsDir)
        const commit = yield* GitMirror.resolve(dir, ref ?? source.branch)
        const signature = selectionSignature(source)
        const entries = yield* GitMirror.listFiles(dir, commit)
        const isSelected = selector(source)
        const selected = new Map<string, TreeEntry>()
        for (const entry of entries) {
          if (!isSelected(entry.path)) continue
          if (entry.mode === "120000") skipped.symlink++
          else if (entry.type !== "blob") skipped.not_a_file++
          else if ((entry.size ?? 0) > config.maxFileBytes) skipped.too_large++
          else selected.set(entry.path, entry)
        }
        // Incremental when the same globs were indexed at a commit this mirror still has.
        let toIndex: Array<TreeEntry>
        let toDelete: Array<string>
        let full = true
        if (previous !== undefined && previous.selection === signature) {
          const diff = yield* Effect.either(GitMirror.diff(dir, previous.indexed_commit, commit))
          if (diff._tag === "Right") {
            full = false
            toIndex = diff.right.changed.flatMap((file) => {
              const entry = selected.get(file)
              return entry === undefined ? [] : [entry]
            })
            toDelete = [...diff.right.changed, ...diff.right.deleted]
          }
        }
        if (full) {
          toIndex = [...selected.values()]
          toDelete = []
        }
        const blobs = yield* GitMirror.readBlobs(dir, [...new Set(toIndex!.map((e) => e.sha))])
        const files: Array<{ path: string; chunks: Array<Chunk> }> = []
        let done = 0
        for (const entry of toIndex!) {
          const bytes = blobs.get(entry.sha)
          if (bytes === undefined || isBinary(bytes)) skipped.binary++
          else
            files.push({
              path: entry.path,
              chunks: chunkFile(entry.path, bytes.toString("utf8"), {
                maxLines: config.chunkMaxLines,
                overlapLines: config.chunkOverlapLines
              })
            })
          done++
          if (done % 50 === 0 || done === toIndex!.length)
            yield* onProgress({ repo: source.name, done, total: toIndex!.length })
        }
        const now = yield* Clock.currentTimeMillis
        // The swap: one transaction per source.
        const chunkCount = yield* Effect.gen(function* () {
          const stale = full
            ? yield* sql<{ id: number }>`SELECT id FROM gt_chunks WHERE repo = ${source.name}`
            : yield* sql<{
                id: number
              }>`SELECT id FROM gt_chunks WHERE repo = ${source.name} AND ${sql.in("path", toDelete!.length > 0 ? toDelete! : [""])}`
          const ids = stale.map((r) => r.id)
          for (let i = 0; i < ids.length; i += INSERT_BATCH) {
            const batch = ids.slice(i, i + INSERT_BATCH)
            yield* sql`DELETE FROM gt_chunks_fts WHERE ${sql.in("rowid", batch)}`
            yield* sql`DELETE FROM gt_chunks WHERE ${sql.in("id", batch)}`
          }
          const rows = files.flatMap((file) =>
            file.chunks.map((chunk) => ({
              repo: source.name,
              path: file.path,
              commit_sha: commit,
              line: chunk.line,
              end_line: chunk.endLine,
              heading: chunk.heading,
              content: chunk.content
            }))
          )
          for (let i = 0; i < rows.length; i += INSERT_BATCH) {
            const batch = rows.slice(i, i + INSERT_BATCH)
            const inserted = yield* sql<{ id: number }>`INSERT INTO gt_chunks ${sql.insert(batch)} RETURNING id`
            const fts = inserted.map((row, j) => ({
              rowid: row.id,
              heading: batch[j]?.heading ?? "",
              content: batch[j]?.content ?? ""
            }))
            yield* sql`INSERT INTO gt_chunks_fts ${sql.insert(fts)}`
          }
          // Unchanged files are identical at the new commit: cite it for every chunk, so no search ever
          // sees one source at two commits.
          yield* sql`UPDATE gt_chunks SET commit_sha = ${commit} WHERE repo = ${source.name} AND commit_sha <> ${commit}`
          const total = yield* sql<{ n: number }>`SELECT count(*) AS n FROM gt_chunks WHERE repo = ${source.name}`
          const count = Number(total[0]?.n ?? 0)
          yield* sql`INSERT INTO gt_sources (name, indexed_commit, indexed_at, selection, chunks)
            VALUES (${source.name}, ${commit}, ${now}, ${signature}, ${count})
            ON CONFLICT (name) DO UPDATE SET indexed_commit = excluded.indexed_commit, indexed_at = excluded.indexed_at,
              selection = excluded.selection, chunks = excluded.chunks`
          return rows.length
        }).pipe(sql.withTransaction)
        const finished = yield* Clock.currentTimeMillis
        return {
          repo: source.name,
          commit,
          previous_commit: previous?.indexed_commit ?? null,
          files_indexed: files.length,
          files_deleted: toDelete!.filter((p) => !selected.has(p)).length,
          files_skipped: skipped.binary + skipped.too_large + skipped.symlink + skipped.not_a_file,
          skipped,
          chunks: chunkCount,
          duration_ms: finished - started,
          error: null
        } satisfies SourceIngest
      }).pipe(
        Effect.catchAll((error) =>
          Effect.gen(function* () {
            const detail = error._tag === "GitFailed" ? error.detail : `database: ${error.message}`
            yield* Effect.logWarning("source ingest failed; its previous index keeps serving").pipe(
              Effect.annotateLogs({ repo: source.name, url: stripCredentials(source.url), detail })
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
              duration_ms: 0,
              error: detail
            } satisfies SourceIngest
          })
        )
      )

    /** Every enabled source, or the one named; at its branch, or at `ref`. */
    const ingest = Effect.fn("Ingester.ingest")(function* (
      request: { readonly repo?: string | undefined; readonly ref?: string | undefined },
      onProgress: (p: IngestProgress) => Effect.Effect<void> = () => Effect.void
    ) {
      const registry = yield* sources.load()
      let chosen: ReadonlyArray<Source>
      if (request.repo !== undefined) {
        const source = registry.sources.find((s) => s.name === request.repo)
        if (source === undefined) {
          return yield* new UnknownRepo({
            repo: request.repo,
            detail: `no source named ${request.repo} in the registry`
          })
        }
        chosen = [source]
      } else {
        chosen = registry.sources.filter((s) => s.enabled)
      }
      const results: Array<SourceIngest> = []
      for (const source of chosen) results.push(yield* ingestSource(source, request.ref, onProgress))
      return new IngestResult({
        registry_commit: registry.commit,
        registry_refused: registry.refused,
        sources: results
      })
    })

    return { ingest } as const
  })
}) {}
