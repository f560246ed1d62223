import * as fs from "node:fs"
import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { Clock, Data, Effect, Either, Schema } from "effect"
import * as YAML from "yaml"
import { GitMirror, redactUrls } from "../platform/GitMirror.js"
import { formatIssues } from "../platform/Validation.js"
import { GtConfig } from "./GtConfig.js"

const Name = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/))
const Globs = Schema.Array(Schema.String.pipe(Schema.minLength(1)))

const SourceEntry = Schema.Struct({
  name: Name,
  description: Schema.optional(Schema.String.pipe(Schema.maxLength(2000))),
  url: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
  branch: Schema.optional(Schema.String),
  owner: Schema.optional(Schema.String),
  owners: Schema.optional(Schema.Array(Schema.String)),
  trust: Schema.optional(Schema.String),
  include: Schema.optional(Globs),
  exclude: Schema.optional(Globs),
  kind: Schema.optionalWith(Schema.Literal("repository", "transcript"), { default: () => "repository" as const }),
  enabled: Schema.optional(Schema.Boolean),
  web_url: Schema.optional(Schema.String)
})

export const SourcesDocument = Schema.Struct({
  version: Schema.Literal(1),
  defaults: Schema.optionalWith(
    Schema.Struct({
      branch: Schema.optional(Schema.String),
      include: Schema.optional(Globs),
      exclude: Schema.optional(Globs)
    }),
    { default: () => ({}) }
  ),
  sources: Schema.Array(SourceEntry)
})

/** One source as the service uses it: defaults applied, URL resolved, trust checked. */
export interface Source {
  readonly name: string
  /** Free text: what the source is (shown by /repos). */
  readonly description: string | null
  readonly url: string
  readonly branch: string | undefined
  readonly owners: ReadonlyArray<string>
  readonly trust: string
  readonly include: ReadonlyArray<string>
  readonly exclude: ReadonlyArray<string>
  readonly kind: "repository" | "transcript"
  readonly enabled: boolean
  readonly webUrl: string | undefined
}

export interface Registry {
  readonly commit: string | null
  readonly sources: ReadonlyArray<Source>
  /** Set when the newest registry was refused and the last good one is in force. */
  readonly refused: string | null
  /** The newest registry could not be fetched at all (git failed), rather than read and refused. */
  readonly unreachable?: boolean
  /** false when there is no registry to read: GT_REGISTRY_REPO unset and no default one created. */
  readonly configured?: boolean
}

export class RegistryRefused extends Data.TaggedError("RegistryRefused")<{ readonly detail: string }> {}

const isUrl = (s: string) => /^[a-z][a-z0-9+.-]*:\/\//i.test(s)

/** Relative source URLs are relative to the registry repository's root. */
const resolveUrl = (given: string, registryRepo: string) => {
  // Surrounding spaces are a typo, not part of a path: " https://…" would be read as a relative path.
  const url = given.trim()
  return isUrl(url) || path.isAbsolute(url)
    ? url
    : isUrl(registryRepo)
      ? new URL(url, registryRepo.endsWith("/") ? registryRepo : `${registryRepo}/`).toString()
      : path.resolve(registryRepo, url)
}

/** Validates sources.yml text; every problem names its path. Pure, for tests. */
export const parseSources = (
  text: string,
  registryRepo: string,
  trustWeights: ReadonlyMap<string, number>
): Either.Either<ReadonlyArray<Source>, string> => {
  let raw: unknown
  try {
    raw = YAML.parse(text)
  } catch (error) {
    // The parser's first line says what and where (line, column); the code frame after it quotes the file,
    // which may hold a URL's credentials.
    return Either.left(redactUrls(`sources.yml is not valid YAML: ${(error as Error).message.split("\n")[0]}`))
  }
  const decoded = Schema.decodeUnknownEither(SourcesDocument, { errors: "all", onExcessProperty: "error" })(raw)
  if (Either.isLeft(decoded)) {
    // Never quoting a refused value: a URL in the wrong place may carry its credentials.
    return Either.left(formatIssues(decoded.left, { limit: 10, prefix: "sources.yml ", withoutValues: true }))
  }
  const doc = decoded.right
  // A missing URL is a problem of the document's shape: listed before the cross-checks, as schema problems are.
  const shape: Array<string> = []
  const problems: Array<string> = []
  const seen = new Set<string>()
  const sources = doc.sources.map((entry, i): Source => {
    if (seen.has(entry.name)) problems.push(`sources.yml sources.${i}.name: ${entry.name} is listed twice`)
    seen.add(entry.name)
    const trust = entry.trust ?? (entry.kind === "transcript" ? "community" : "reference")
    if (!trustWeights.has(trust)) {
      problems.push(
        `sources.yml sources.${i}.trust: ${trust} is not a tier of GT_TRUST_WEIGHTS (${[...trustWeights.keys()].join(", ")})`
      )
    }
    if (entry.kind === "transcript" && trust === "canonical") {
      problems.push(`sources.yml sources.${i}.trust: a transcript is never canonical ground truth`)
    }
    if (entry.url === undefined) shape.push(`sources.yml sources.${i}.url: is missing`)
    // A blank URL would resolve to the registry repository itself.
    else if (entry.url.trim() === "") shape.push(`sources.yml sources.${i}.url: is empty`)
    return {
      name: entry.name,
      description: entry.description ?? null,
      url: resolveUrl(entry.url ?? "", registryRepo),
      branch: entry.branch ?? doc.defaults.branch,
      owners: entry.owners ?? (entry.owner === undefined ? [] : [entry.owner]),
      trust,
      include: entry.include ?? doc.defaults.include ?? ["**/*.md"],
      exclude: entry.exclude ?? doc.defaults.exclude ?? [],
      kind: entry.kind,
      enabled: entry.enabled ?? entry.kind !== "transcript",
      webUrl: entry.web_url
    }
  })
  const all = [...shape, ...problems]
  return all.length > 0 ? Either.left(redactUrls(all.join("; "))) : Either.right(sources)
}

/**
 * The source registry, read from `sources.yml` in the registry repository at GT_REGISTRY_REF. Every
 * valid version is kept; a refused one leaves the last good registry in force and says why.
 */
export class Sources extends Effect.Service<Sources>()("groundtruth/Sources", {
  effect: Effect.gen(function* () {
    const config = yield* GtConfig
    const sql = yield* SqlClient.SqlClient

    // The stored text is re-read on every call (another process may have ingested), but parsed only
    // when it changed: /search, /repos and /ask read the registry on every request.
    let parsedCache: { readonly text: string; readonly sources: ReadonlyArray<Source> } | undefined

    const lastGood = (refused: string | null) =>
      Effect.gen(function* () {
        const rows = yield* sql<{
          commit_sha: string
          text: string
        }>`SELECT commit_sha, text FROM gt_registry WHERE id = 1`
        const row = rows[0]
        if (row === undefined) return { commit: null, sources: [], refused }
        if (parsedCache?.text !== row.text) {
          const parsed = parseSources(row.text, config.registryRepo, config.trustWeights)
          parsedCache = { text: row.text, sources: Either.getOrElse(parsed, () => []) }
        }
        return { commit: row.commit_sha, sources: parsedCache.sources, refused } satisfies Registry
      }).pipe(Effect.orDie)

    /** Fetches the registry repository and returns the registry in force. */
    const load = Effect.fn("Sources.load")(function* () {
      const repo = config.registryRepo
      // The default local registry that was never created means "no sources", not an error.
      if (config.registryIsDefault && !fs.existsSync(repo))
        return { commit: null, sources: [], refused: null, configured: false } satisfies Registry
      const attempt = yield* Effect.either(
        Effect.gen(function* () {
          const dir = yield* GitMirror.sync(repo, config.mirrorsDir)
          // A ref that names nothing is the registry's configuration at fault, not the network: refused, not unreachable.
          const commit = yield* GitMirror.resolve(dir, config.registryRef).pipe(
            Effect.mapError(
              () =>
                new RegistryRefused({ detail: `GT_REGISTRY_REF ${config.registryRef ?? "(default)"} names no commit` })
            )
          )
          const bytes = yield* GitMirror.show(dir, commit, "sources.yml")
          if (bytes === undefined) return yield* new RegistryRefused({ detail: `sources.yml is missing at ${commit}` })
          const text = bytes.toString("utf8")
          const parsed = parseSources(text, repo, config.trustWeights)
          if (Either.isLeft(parsed)) return yield* new RegistryRefused({ detail: parsed.left })
          return { commit, text, sources: parsed.right }
        })
      )
      if (Either.isLeft(attempt)) {
        const detail = attempt.left.detail
        const inForce = yield* lastGood(detail)
        yield* Effect.logWarning(
          inForce.commit === null
            ? "source registry refused, and none was ever accepted"
            : "source registry refused; the last good one stays in force"
        ).pipe(Effect.annotateLogs("detail", detail))
        return { ...inForce, unreachable: attempt.left._tag === "GitFailed" } satisfies Registry
      }
      const now = yield* Clock.currentTimeMillis
      yield* sql`INSERT INTO gt_registry (id, commit_sha, text, loaded_at) VALUES (1, ${attempt.right.commit}, ${attempt.right.text}, ${now})
        ON CONFLICT (id) DO UPDATE SET commit_sha = excluded.commit_sha, text = excluded.text, loaded_at = excluded.loaded_at`.pipe(
        Effect.orDie
      )
      return { commit: attempt.right.commit, sources: attempt.right.sources, refused: null } satisfies Registry
    })

    /** The registry in force without fetching (for reads such as /repos and /search). */
    const current = lastGood(null)

    return { load, current } as const
  })
}) {}
