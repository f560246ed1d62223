import { Args, Command, HelpDoc, Options } from "@effect/cli"
import { Effect } from "effect"
import { SEARCH_LIMIT_MAX, SEARCH_QUERY_MAX_CHARS } from "../contracts/groundtruth/Search.js"
import { ServicesLive } from "../layers/Live.js"
import { Ingester, type IngestProgress } from "../services/groundtruth/Ingester.js"
import { Retriever } from "../services/groundtruth/Retriever.js"
import { CommandFailed, emit, failWith, integerOption, json, table } from "./Output.js"

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

const ingest = Command.make(
  "ingest",
  {
    repo: Args.text({ name: "REPO" }).pipe(
      Args.optional,
      Args.withDescription("One source (default: every enabled one)")
    ),
    ref: Options.text("ref").pipe(
      Options.optional,
      Options.withDescription("Branch, tag or commit (default: the source's branch)")
    ),
    json
  },
  ({ json, ref, repo }) =>
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
).pipe(Command.withDescription("Fetch the source registry and ingest its repositories (incremental per source)"))

const search = Command.make(
  "search",
  {
    // The same bounds as GET /search's q and limit: a usage error (exit 2), never silently clamped.
    query: Args.text({ name: "QUERY" }).pipe(
      Args.mapEffect((q) =>
        q.length >= 1 && q.length <= SEARCH_QUERY_MAX_CHARS
          ? Effect.succeed(q)
          : Effect.fail(HelpDoc.p(`QUERY: must be 1 to ${SEARCH_QUERY_MAX_CHARS} characters`))
      )
    ),
    repo: Options.text("repo").pipe(Options.optional),
    limit: integerOption("limit", 1, SEARCH_LIMIT_MAX).pipe(Options.withDefault(10)),
    json
  },
  ({ json, limit, query, repo }) =>
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
).pipe(Command.withDescription("Search the index; every hit carries its citation"))

const repos = Command.make("repos", { json }, ({ json }) =>
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
).pipe(Command.withDescription("The configured sources and what is indexed of each"))

export const gt = Command.make("gt").pipe(
  Command.withDescription("Ground truth: ingest repositories, search with citations"),
  Command.withSubcommands([ingest, search, repos]),
  Command.provide(ServicesLive)
)
