import { Effect } from "effect"
import { Ingester, type IngestProgress } from "../../services/groundtruth/Ingester.js"
import { Retriever } from "../../services/groundtruth/Retriever.js"
import type { ingestConfig, searchConfig } from "../gt.js"
import type { Parsed } from "../Lazy.js"
import { CommandFailed, emit, failWith, table } from "../Output.js"

/** A one-line progress bar on stderr when it is a terminal; nothing otherwise. */
const progressBar = (progress: IngestProgress) =>
  Effect.sync(() => {
    if (process.stderr.isTTY !== true) return
    const width = 30
    const filled = progress.total === 0 ? width : Math.round((progress.done / progress.total) * width)
    process.stderr.write(
      `\r${progress.repo} [${"#".repeat(filled)}${"-".repeat(width - filled)}] ${progress.done}/${progress.total} files`
    )
    if (progress.done === progress.total) process.stderr.write("\n")
  })

export const ingest = ({ json, ref, repo }: Parsed<typeof ingestConfig>) =>
  Effect.gen(function* () {
    const ingester = yield* Ingester
    const result = yield* ingester
      .ingest(
        { repo: repo._tag === "Some" ? repo.value : undefined, ref: ref._tag === "Some" ? ref.value : undefined },
        progressBar
      )
      .pipe(
        Effect.catchTags({
          UnknownRepo: failWith(json),
          UnknownRef: failWith(json),
          SourceRegistryRefused: failWith(json),
          SourceRegistryUnreachable: failWith(json),
          SourceRegistryNotConfigured: failWith(json),
          SourceDisabled: failWith(json)
        })
      )
    yield* emit(json, result, (r) =>
      [
        ...(r.registry_refused ? [`registry refused (last good one in force): ${r.registry_refused}`] : []),
        ...(r.sources_removed.length > 0
          ? [`index dropped (no longer enabled in the registry): ${r.sources_removed.join(", ")}`]
          : []),
        table(
          ["REPO", "COMMIT", "FILES", "SKIPPED", "CHUNKS", "MS", "ERROR"],
          r.sources.map((s) => [
            s.repo,
            s.commit?.slice(0, 12) ?? "-",
            String(s.files_indexed),
            String(s.files_skipped),
            String(s.chunks),
            String(s.duration_ms),
            s.error ?? ""
          ])
        )
      ].join("\n")
    )
    const failed = result.sources.filter((s) => s.error !== null)
    if (failed.length > 0)
      return yield* new CommandFailed({ detail: `${failed.map((s) => s.repo).join(", ")} failed to ingest` })
  })

export const search = ({ json, limit, query, repo }: Parsed<typeof searchConfig>) =>
  Effect.gen(function* () {
    const retriever = yield* Retriever
    const result = yield* retriever
      .search(query, { repos: repo._tag === "Some" ? [repo.value] : undefined, limit })
      .pipe(Effect.catchTag("UnknownRepo", failWith(json)))
    yield* emit(json, result, (r) =>
      r.hits.length === 0
        ? "no hits"
        : r.hits
            .map(
              (h) =>
                `${h.repo}:${h.path}:${h.line}-${h.end_line} @${h.commit.slice(0, 12)} (${h.score})\n  ${h.snippet.replace(/\s+/g, " ")}`
            )
            .join("\n")
    )
  })

export const repos = ({ json }: { readonly json: boolean }) =>
  Effect.gen(function* () {
    const list = yield* (yield* Retriever).repos()
    yield* emit(json, list, (rows) =>
      rows.length === 0
        ? "no sources (set GT_REGISTRY_REPO)"
        : table(
            ["NAME", "TRUST", "ENABLED", "COMMIT", "CHUNKS", "URL"],
            rows.map((r) => [
              r.name,
              r.trust,
              String(r.enabled),
              r.indexed_commit?.slice(0, 12) ?? "-",
              String(r.chunks),
              r.url
            ])
          )
    )
  })
