import { Args, Command, HelpDoc, Options } from "@effect/cli"
import { Effect } from "effect"
import { SEARCH_LIMIT_MAX, SEARCH_QUERY_MAX_CHARS } from "../contracts/groundtruth/Search.js"
import { GroundTruthLive } from "./Layers.js"
import { lazyRun } from "./Lazy.js"
import { integerOption, json } from "./Output.js"

const impl = lazyRun(() => import("./run/gt.js"))

export const ingestConfig = {
  repo: Args.text({ name: "REPO" }).pipe(
    Args.optional,
    Args.withDescription("One source (default: every enabled one)")
  ),
  ref: Options.text("ref").pipe(
    Options.optional,
    Options.withDescription("Branch, tag or commit (default: the source's branch)")
  ),
  json
}

const ingest = Command.make("ingest", ingestConfig, (args) => impl((m) => m.ingest(args))).pipe(
  Command.withDescription("Fetch the source registry and ingest its repositories (incremental per source)")
)

export const searchConfig = {
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
}

const search = Command.make("search", searchConfig, (args) => impl((m) => m.search(args))).pipe(
  Command.withDescription("Search the index; every hit carries its citation")
)

const repos = Command.make("repos", { json }, (args) => impl((m) => m.repos(args))).pipe(
  Command.withDescription("The configured sources and what is indexed of each")
)

export const gt = Command.make("gt").pipe(
  Command.withDescription("Ground truth: ingest repositories, search with citations"),
  Command.withSubcommands([ingest, search, repos]),
  Command.provide(GroundTruthLive)
)
