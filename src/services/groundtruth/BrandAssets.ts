import * as path from "node:path"
import { Effect, Either, Ref, Schema } from "effect"
import * as YAML from "yaml"
import type { AssetRecord } from "../../contracts/groundtruth/Assets.js"
import { AssetNotFound } from "../../contracts/groundtruth/Errors.js"
import { displayUrl, GitMirror } from "../platform/GitMirror.js"
import { formatIssues } from "../platform/Validation.js"
import { GtConfig } from "./GtConfig.js"
import { type Source, Sources } from "./Sources.js"

export const AssetKinds = ["logo", "favicon", "app_icon", "font", "store_badge"] as const
export type AssetKind = (typeof AssetKinds)[number]

const SafePath = Schema.String.pipe(
  Schema.filter(
    (p) =>
      (p.length > 0 && !p.startsWith("/") && !p.includes("\0") && !p.split("/").some((s) => s === ".." || s === "")) ||
      "expected a repository-relative path without .. segments"
  )
)

const AssetEntry = Schema.Struct({
  repo: Schema.String,
  path: SafePath,
  ref: Schema.optional(Schema.String),
  visibility: Schema.optionalWith(Schema.Literal("public", "private"), { default: () => "public" as const }),
  variant: Schema.optional(Schema.String),
  format: Schema.optional(Schema.String)
})

export const BrandAssetsDocument = Schema.Struct({
  products: Schema.Record({
    key: Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9-]{0,63}$/)),
    value: Schema.partial(
      Schema.Struct(
        Object.fromEntries(AssetKinds.map((k) => [k, Schema.Array(AssetEntry)])) as {
          [K in AssetKind]: Schema.Array$<typeof AssetEntry>
        }
      )
    )
  })
})

const contentTypes: Record<string, string> = {
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".webp": "image/webp",
  ".gif": "image/gif",
  ".ico": "image/x-icon",
  ".pdf": "application/pdf",
  ".woff": "font/woff",
  ".woff2": "font/woff2",
  ".ttf": "font/ttf",
  ".otf": "font/otf"
}
export const contentTypeOf = (file: string) =>
  contentTypes[path.extname(file).toLowerCase()] ?? "application/octet-stream"

/** https://host/org/repo(.git) → https://host/org/repo; other URLs (paths, ssh) have no web form. */
const webUrlOf = (source: Source) =>
  source.webUrl ?? (/^https?:\/\//.test(source.url) ? source.url.replace(/\.git$/, "").replace(/\/+$/, "") : undefined)

type AssetsDocument = typeof BrandAssetsDocument.Type
type AssetEntry = typeof AssetEntry.Type
type AssetSettings = Pick<GtConfig, "mirrorsDir" | "blobUrlPattern">

/** brand-assets.yml's text as its document, or why it is refused (a line naming each invalid field). */
const decodeDocument = (text: string): Either.Either<AssetsDocument, string> =>
  Either.flatMap(
    Either.try({
      try: () => YAML.parse(text) as unknown,
      catch: (error) => `not valid YAML: ${(error as Error).message.split("\n")[0]}`
    }),
    (raw) =>
      Either.mapLeft(
        Schema.decodeUnknownEither(BrandAssetsDocument, { errors: "all", onExcessProperty: "error" })(raw),
        (error) => formatIssues(error, { limit: 10 })
      )
  )

/** Where an asset is shown on its source's web host (GT_BLOB_URL_PATTERN); none without a web form or a commit. */
const blobUrlOf = (pattern: string, source: Source, entry: AssetEntry, ref: string, commit: string | null) => {
  // Shown to clients: never the credentials (or a token in the query) a git URL may carry.
  const fromSource = webUrlOf(source)
  const web = fromSource === undefined ? undefined : displayUrl(fromSource)
  return web === undefined || commit === null
    ? null
    : pattern
        .replaceAll("{web_url}", web)
        .replaceAll("{commit}", commit)
        .replaceAll("{ref}", encodeURIComponent(ref))
        .replaceAll("{path}", entry.path.split("/").map(encodeURIComponent).join("/"))
}

/**
 * Every entry whose source the registry serves, in product, kind and entry order, each resolved to its source's
 * commit at the asset's ref (null when git cannot resolve it).
 */
const resolveAssets = (settings: AssetSettings, document: AssetsDocument, enabled: ReadonlyMap<string, Source>) =>
  Effect.gen(function* () {
    const records: Array<AssetRecord> = []
    for (const [product, kinds] of Object.entries(document.products).sort(([a], [b]) => a.localeCompare(b))) {
      for (const kind of AssetKinds) {
        const entries = kinds[kind] ?? []
        for (const [index, entry] of entries.entries()) {
          const source = enabled.get(entry.repo)
          if (source === undefined) continue
          const ref = entry.ref ?? source.branch ?? "HEAD"
          const commit = yield* Effect.gen(function* () {
            const dir = yield* GitMirror.sync(source.url, settings.mirrorsDir)
            return yield* GitMirror.resolve(dir, ref)
          }).pipe(Effect.orElseSucceed(() => null))
          records.push({
            product,
            kind,
            index,
            repo: entry.repo,
            path: entry.path,
            ref,
            commit,
            visibility: entry.visibility,
            variant: entry.variant ?? null,
            format: entry.format ?? path.extname(entry.path).slice(1).toLowerCase() ?? null,
            blobUrl: blobUrlOf(settings.blobUrlPattern, source, entry, ref, commit),
            ...(entry.visibility === "private" ? { contentUrl: `/assets/${product}/${kind}/${index}/content` } : {})
          })
        }
      }
    }
    return records
  })

/**
 * The explicit brand-asset registry (`brand-assets.yml` beside `sources.yml`): only listed assets
 * exist. Each resolves to its source's commit at the asset's ref; private ones are served by the
 * service itself, byte for byte from git.
 */
export class BrandAssets extends Effect.Service<BrandAssets>()("groundtruth/BrandAssets", {
  effect: Effect.gen(function* () {
    const config = yield* GtConfig
    const sources = yield* Sources
    const cache = yield* Ref.make(new Map<string, ReadonlyArray<AssetRecord>>())
    const lastValid = yield* Ref.make<ReadonlyArray<AssetRecord>>([])

    /** The asset list at the registry's commit, cached per commit; a refused document keeps the last valid list. */
    const load = Effect.gen(function* () {
      const registry = yield* sources.current
      if (registry.commit === null) return [] as ReadonlyArray<AssetRecord>
      const key = registry.commit
      const cached = (yield* Ref.get(cache)).get(key)
      if (cached !== undefined) return cached
      const registryDir = yield* GitMirror.sync(config.registryRepo, config.mirrorsDir)
      const bytes = yield* GitMirror.show(registryDir, registry.commit, "brand-assets.yml")
      if (bytes === undefined) return []
      const decoded = decodeDocument(bytes.toString("utf8"))
      // The registry decides what is served: a disabled source's assets are not.
      const enabled = registry.sources.filter((s) => s.enabled)
      if (Either.isLeft(decoded)) {
        // Like a refused sources.yml: the last valid asset list keeps serving, never none at all (still only
        // the assets of sources the registry serves).
        const serving = new Set(enabled.map((s) => s.name))
        const kept = (yield* Ref.get(lastValid)).filter((record) => serving.has(record.repo))
        yield* Effect.logWarning("brand-assets.yml refused; the last valid asset list keeps serving").pipe(
          Effect.annotateLogs({ detail: decoded.left, kept: kept.length })
        )
        yield* Ref.update(cache, (map) => new Map(map).set(key, kept))
        return kept
      }
      const records = yield* resolveAssets(config, decoded.right, new Map(enabled.map((s) => [s.name, s])))
      yield* Ref.update(cache, (m) => new Map(m).set(key, records))
      yield* Ref.set(lastValid, records)
      return records
    }).pipe(
      Effect.catchAll((error) =>
        Effect.zipRight(
          Effect.logWarning("brand assets unavailable", error),
          Effect.succeed([] as ReadonlyArray<AssetRecord>)
        )
      )
    )

    const search = (filter: {
      readonly product?: string | undefined
      readonly kind?: string | undefined
      readonly q?: string | undefined
    }) =>
      Effect.map(load, (records) =>
        records.filter(
          (r) =>
            (filter.product === undefined || r.product === filter.product) &&
            (filter.kind === undefined || r.kind === filter.kind) &&
            (filter.q === undefined ||
              [r.product, r.kind, r.path].some((field) => field.toLowerCase().includes(filter.q!.toLowerCase())))
        )
      )

    const products = Effect.map(load, (records) => [...new Set(records.map((r) => r.product))])
    const kinds = Effect.succeed([...AssetKinds])

    const ofKind = (product: string, kind: string) =>
      Effect.flatMap(search({ product, kind }), (records) =>
        records.length === 0
          ? Effect.fail(new AssetNotFound({ detail: `no ${kind} assets for ${product}` }))
          : Effect.succeed(records)
      )

    /** The exact bytes of a listed asset at its commit; nothing else is reachable. */
    const content = (product: string, kind: string, index: number) =>
      Effect.gen(function* () {
        const records = yield* search({ product, kind })
        const record = records.find((r) => r.index === index)
        if (record === undefined || record.commit === null) {
          return yield* new AssetNotFound({ detail: `no asset ${product}/${kind}/${index}` })
        }
        const source = (yield* sources.current).sources.find((s) => s.name === record.repo)
        if (source === undefined) return yield* new AssetNotFound({ detail: `no source ${record.repo}` })
        const dir = yield* GitMirror.sync(source.url, config.mirrorsDir).pipe(
          Effect.mapError((e) => new AssetNotFound({ detail: e.detail }))
        )
        const bytes = yield* GitMirror.show(dir, record.commit, record.path).pipe(
          Effect.mapError((e) => new AssetNotFound({ detail: e.detail }))
        )
        if (bytes === undefined)
          return yield* new AssetNotFound({ detail: `${record.path} is not in ${record.repo} at ${record.commit}` })
        return { bytes, contentType: contentTypeOf(record.path), record }
      })

    return { search, products, kinds, ofKind, content } as const
  })
}) {}
