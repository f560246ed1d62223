import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Clock, Config, Duration, Effect, Option, type ParseResult, Ref, Schema } from "effect"
import * as Yaml from "yaml"
import { AppConfig } from "../../../platform/AppConfig.js"
import { sha256Hex } from "../../../platform/Digest.js"
import { durationSetting } from "../../../platform/DurationSetting.js"
import { GitMirror, stripCredentials } from "../../../platform/GitMirror.js"
import { ObjectGateway } from "../../../platform/objects/ObjectGateway.js"
import { packageExample } from "../../../platform/Package.js"
import { formatIssues } from "../../../platform/Validation.js"
import { crossReferenceProblems, FleetRegistryDocument, rawCrossReferenceProblems } from "./Schema.js"

/** The source could not be read (missing file, unreachable repository, unknown ref). */
export class FleetRegistryUnavailable extends Schema.TaggedError<FleetRegistryUnavailable>()(
  "FleetRegistryUnavailable",
  {
    code: Schema.Literal("REGISTRY_UNAVAILABLE"),
    source: Schema.String,
    detail: Schema.String
  }
) {}

/** The source was read and refused: `problems` name the offending fields by path. */
export class FleetRegistryInvalid extends Schema.TaggedError<FleetRegistryInvalid>()("FleetRegistryInvalid", {
  code: Schema.Literal("REGISTRY_INVALID"),
  source: Schema.String,
  problems: Schema.Array(Schema.String),
  detail: Schema.String
}) {}

export interface FleetRegistrySource {
  readonly kind: "file" | "git" | "bundled"
  /** The file path, or the repository URL without credentials. */
  readonly location: string
  readonly ref?: string | undefined
  readonly commit?: string | undefined
  readonly path?: string | undefined
}

/**
 * A validated registry and where it came from. `freshness` says whether it is a current read of the
 * configured source, the last valid snapshot (historical: the source could not be read now), or the
 * registry bundled with the package.
 */
export interface FleetRegistrySnapshot {
  readonly registry: FleetRegistryDocument
  readonly digest: string
  readonly loadedAt: number
  readonly source: FleetRegistrySource
  readonly freshness: "current" | "cached" | "bundled"
  /** Why a cached snapshot was answered instead of a current read. */
  readonly cachedBecause?: string
}

/**
 * A snapshot held in memory that `read` answers instead of reading the source (`ctl serve`: no request waits on
 * git): `current` never reads git, `refresh` reads the source now and holds what it answered.
 */
export interface HeldRegistry {
  readonly current: Effect.Effect<FleetRegistrySnapshot, FleetRegistryUnavailable | FleetRegistryInvalid>
  readonly refresh: Effect.Effect<void>
}

/** Where every successful load is kept, with its digest and load time. */
export const LAST_VALID_KEY = "state/registry/last-valid.json"

const StoredSnapshot = Schema.Struct({
  text: Schema.String,
  digest: Schema.String,
  loaded_at: Schema.Number,
  source: Schema.Struct({
    kind: Schema.Literal("file", "git", "bundled"),
    location: Schema.String,
    ref: Schema.optional(Schema.String),
    commit: Schema.optional(Schema.String),
    path: Schema.optional(Schema.String)
  })
})

const isGitUrl = (location: string) =>
  /^(https?|ssh|git|file):\/\//.test(location) || /\.git$/.test(location) || /^[\w.-]+@[\w.-]+:/.test(location)

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error))

/**
 * The canonical fleet registry: one YAML document from a file or a git repository at a ref
 * (KEEL_REGISTRY, KEEL_REGISTRY_REF, KEEL_REGISTRY_PATH), validated with precise error paths. Every
 * successful load is kept as the last valid snapshot; readers that accept history get it, marked
 * cached, when the source cannot be read.
 */
export class FleetRegistry extends Effect.Service<FleetRegistry>()("fleet/FleetRegistry", {
  effect: Effect.gen(function* () {
    const app = yield* AppConfig
    const objects = yield* ObjectGateway
    const configured = yield* Config.option(Config.string("KEEL_REGISTRY"))
    const ref = yield* Config.option(Config.string("KEEL_REGISTRY_REF"))
    const filePath = yield* Config.string("KEEL_REGISTRY_PATH").pipe(Config.withDefault("registry.yml"))
    // A git source that sends nothing for this long is unavailable (and its git killed), not a hang.
    const gitTimeout = yield* durationSetting("KEEL_GIT_TIMEOUT").pipe(Config.withDefault(Duration.seconds(30)))
    // Unset: the data dir's fleet-registry.yml (the demo seed puts the example there on first start).
    const location = Option.some(
      Option.match(configured, {
        onNone: () => path.join(app.dataDir, "fleet-registry.yml"),
        onSome: (value) => (isGitUrl(value) ? value : path.resolve(value))
      })
    )

    /** Parses and validates registry text; never reads anything. */
    const parse = (text: string, source: string) =>
      Effect.gen(function* () {
        let raw: unknown
        try {
          raw = Yaml.parse(text, { prettyErrors: true })
        } catch (error) {
          return yield* new FleetRegistryInvalid({
            code: "REGISTRY_INVALID",
            source,
            problems: [`(yaml): ${describe(error).split("\n")[0]}`],
            detail: `${source} is not valid YAML`
          })
        }
        const decoded = yield* Schema.decodeUnknown(FleetRegistryDocument, {
          onExcessProperty: "error",
          errors: "all"
        })(raw).pipe(
          Effect.mapError((error: ParseResult.ParseError) => {
            // The schema's problems and the cross-checks together: one round trip fixes everything.
            const problems = [...formatIssues(error).split("; "), ...rawCrossReferenceProblems(raw)]
            return new FleetRegistryInvalid({
              code: "REGISTRY_INVALID",
              source,
              problems,
              detail: `${source} is not a valid registry: ${problems.slice(0, 3).join("; ")}`
            })
          })
        )
        const problems = crossReferenceProblems(decoded)
        if (problems.length > 0) {
          return yield* new FleetRegistryInvalid({
            code: "REGISTRY_INVALID",
            source,
            problems: [...problems],
            detail: `${source} is not a valid registry: ${problems.slice(0, 3).join("; ")}`
          })
        }
        return decoded
      })

    const readSource = Effect.gen(function* () {
      if (Option.isNone(location)) {
        return yield* new FleetRegistryUnavailable({
          code: "REGISTRY_UNAVAILABLE",
          source: "(none)",
          detail: "KEEL_REGISTRY is not set"
        })
      }
      const where = location.value
      if (!isGitUrl(where)) {
        const text = yield* Effect.tryPromise({
          try: () => fs.readFile(where, "utf8"),
          catch: (error) =>
            new FleetRegistryUnavailable({ code: "REGISTRY_UNAVAILABLE", source: where, detail: describe(error) })
        })
        return { text, source: { kind: "file", location: where } satisfies FleetRegistrySource }
      }
      const shown = stripCredentials(where)
      const unavailable = (detail: string) =>
        new FleetRegistryUnavailable({ code: "REGISTRY_UNAVAILABLE", source: shown, detail })
      const dir = yield* GitMirror.sync(where, path.join(app.dataDir, "registry-mirrors"), {
        stallMs: Duration.toMillis(gitTimeout)
      }).pipe(Effect.mapError((e) => unavailable(e.detail)))
      const commit = yield* GitMirror.resolve(dir, Option.getOrUndefined(ref)).pipe(
        Effect.mapError((e) => unavailable(e.detail))
      )
      const bytes = yield* GitMirror.show(dir, commit, filePath).pipe(Effect.mapError((e) => unavailable(e.detail)))
      if (bytes === undefined) return yield* unavailable(`${filePath} does not exist at ${commit}`)
      return {
        text: bytes.toString("utf8"),
        source: {
          kind: "git",
          location: shown,
          ref: Option.getOrElse(ref, () => "HEAD"),
          commit,
          path: filePath
        } satisfies FleetRegistrySource
      }
    })

    /** A current read of the configured source; a valid one becomes the last valid snapshot. */
    const load = Effect.fn("FleetRegistry.load")(function* (options: { readonly record?: boolean } = {}) {
      const { source, text } = yield* readSource
      const registry = yield* parse(text, source.location)
      const loadedAt = yield* Clock.currentTimeMillis
      const digest = sha256Hex(text)
      if (options.record !== false) {
        yield* objects
          .putJson(LAST_VALID_KEY, { text, digest, loaded_at: loadedAt, source })
          .pipe(
            Effect.catchAll((error) =>
              Effect.logWarning("could not keep the registry snapshot").pipe(
                Effect.annotateLogs("detail", error.detail)
              )
            )
          )
      }
      const snapshot: FleetRegistrySnapshot = { registry, digest, loadedAt, source, freshness: "current" }
      return snapshot
    })

    /** Whether a snapshot's source is the one configured now: same file, or same repository, ref and path. */
    const isConfiguredSource = (source: FleetRegistrySource) => {
      if (Option.isNone(location)) return false
      const where = location.value
      if (!isGitUrl(where)) return source.kind === "file" && source.location === where
      return (
        source.kind === "git" &&
        source.location === stripCredentials(where) &&
        source.ref === Option.getOrElse(ref, () => "HEAD") &&
        source.path === filePath
      )
    }

    /** The last valid snapshot, as history. */
    const lastValid = Effect.gen(function* () {
      const stored = yield* objects.getJson(LAST_VALID_KEY).pipe(Effect.orElseSucceed(() => Option.none()))
      if (Option.isNone(stored)) return Option.none<Omit<FleetRegistrySnapshot, "freshness">>()
      const snapshot = yield* Schema.decodeUnknown(StoredSnapshot)(stored.value).pipe(Effect.option)
      if (Option.isNone(snapshot)) return Option.none()
      const registry = yield* parse(snapshot.value.text, snapshot.value.source.location).pipe(Effect.option)
      return Option.map(registry, (registry) => ({
        registry,
        digest: snapshot.value.digest,
        loadedAt: snapshot.value.loaded_at,
        source: snapshot.value.source
      }))
    })

    /**
     * A current read, or, when the source cannot be read and the caller accepts history, the last
     * valid snapshot marked `cached`. An invalid registry is never papered over by a snapshot.
     */
    const readSourceNow = Effect.fn("FleetRegistry.readSourceNow")(function* (
      options: {
        readonly allowCached?: boolean
        /** false for pure readers (gates): the read then writes nothing, not even the snapshot. */
        readonly record?: boolean
      } = {}
    ) {
      return yield* load({ record: options.record ?? true }).pipe(
        Effect.catchTag("FleetRegistryUnavailable", (error) =>
          Effect.gen(function* () {
            if (options.allowCached !== true) return yield* error
            const snapshot = yield* lastValid
            // History of the configured source only: a snapshot of another file or repository (the setting
            // changed, or mistyped) would act on a registry nobody configured.
            if (Option.isNone(snapshot) || !isConfiguredSource(snapshot.value.source)) return yield* error
            const cached: FleetRegistrySnapshot = {
              ...snapshot.value,
              freshness: "cached",
              cachedBecause: error.detail
            }
            return cached
          })
        )
      )
    })

    /** The held snapshot `read` answers, once the server installs one (`serveFromHeld`); none in one-shot commands. */
    const held = yield* Ref.make(Option.none<HeldRegistry>())

    /**
     * The registry: in `ctl serve`, the held snapshot (no git on the caller's path; bounded staleness,
     * docs/control-plane.md); elsewhere a read of the source (`readSourceNow`). A caller that does not accept
     * history (`allowCached` unset) is refused a snapshot that is itself history, as a direct read would be.
     */
    const read = Effect.fn("FleetRegistry.read")(function* (
      options: { readonly allowCached?: boolean; readonly record?: boolean } = {}
    ) {
      const serving = yield* Ref.get(held)
      if (Option.isNone(serving)) return yield* readSourceNow(options)
      const snapshot = yield* serving.value.current
      if (snapshot.freshness === "cached" && options.allowCached !== true)
        return yield* new FleetRegistryUnavailable({
          code: "REGISTRY_UNAVAILABLE",
          source: stripCredentials(snapshot.source.location),
          detail: snapshot.cachedBecause ?? "only a snapshot of the registry is at hand"
        })
      return snapshot
    })

    /** From now on `read` answers `source`'s snapshot (`ctl serve` installs it at start). */
    const serveFromHeld = (source: HeldRegistry) => Ref.set(held, Option.some(source))

    /** After a write: the held snapshot (if any) is read again now, so the change is in force at once. */
    const reread = Effect.gen(function* () {
      const serving = yield* Ref.get(held)
      if (Option.isSome(serving)) return yield* serving.value.refresh
      yield* readSourceNow().pipe(Effect.ignore)
    })

    /**
     * The last valid snapshot of the configured source, marked `cached` with `because`, without reading the source
     * (no git): what a reader that must not wait answers before its first read completes.
     */
    const cachedOnly = (because: string) =>
      Effect.map(lastValid, (snapshot) =>
        Option.filter(snapshot, (s) => isConfiguredSource(s.source)).pipe(
          Option.map((s): FleetRegistrySnapshot => ({ ...s, freshness: "cached", cachedBecause: because }))
        )
      )

    /** The registry shipped inside the package: used only when asked for (`--bundled-registry`). */
    const bundled = Effect.fn("FleetRegistry.bundled")(function* () {
      const file = packageExample("registry.yml")
      if (file === undefined) {
        return yield* new FleetRegistryUnavailable({
          code: "REGISTRY_UNAVAILABLE",
          source: "(bundled)",
          detail: "this package ships no registry"
        })
      }
      const text = yield* Effect.tryPromise({
        try: () => fs.readFile(file, "utf8"),
        catch: (error) =>
          new FleetRegistryUnavailable({ code: "REGISTRY_UNAVAILABLE", source: file, detail: describe(error) })
      })
      const registry = yield* parse(text, file)
      return {
        registry,
        digest: sha256Hex(text),
        loadedAt: yield* Clock.currentTimeMillis,
        source: { kind: "bundled", location: file },
        freshness: "bundled"
      } satisfies FleetRegistrySnapshot
    })

    /** Where the registry comes from (for its writer): the file or repository, its ref and path, the mirrors. */
    const origin = {
      location: Option.getOrUndefined(location),
      isGit: Option.isSome(location) && isGitUrl(location.value),
      ref: Option.getOrUndefined(ref),
      filePath,
      mirrorsDir: path.join(app.dataDir, "registry-mirrors"),
      gitTimeoutMs: Duration.toMillis(gitTimeout)
    } as const

    return {
      parse,
      load,
      read,
      readSourceNow,
      serveFromHeld,
      reread,
      lastValid,
      cachedOnly,
      bundled,
      origin
    } as const
  })
}) {}
