import { Effect, Either, Option, ParseResult, Schema } from "effect"
import { ObjectStore } from "../../../platform/objects/ObjectStore.js"
import { releaseKey, verifyRelease } from "../../shared/releases/ReleaseManifest.js"
import { ReleaseAuthority } from "./ReleaseAuthority.js"
import { ReleaseCatalog } from "./ReleaseCatalog.js"
import { objectStoreReader } from "./ReleaseReaders.js"
import { type ProductRollout, ReleaseRollout } from "./ReleaseRollout.js"
import { ReleaseRun, recipeAt } from "./ReleaseRun.js"
import { committedFile, tagAndHead } from "./SourceArchive.js"

/** The tag cannot be released: not a release tag, not checked out, its declaration or recipes wrong. */
export class TagRefused extends Schema.TaggedError<TagRefused>()("TagRefused", {
  code: Schema.Literal("TAG_REFUSED"),
  detail: Schema.String
}) {}

/** The release declaration file: the version the source declares and what each platform needs. */
export const DECLARATION_FILE = "keel-release-declaration.json"

const Platform = Schema.Struct({
  /** The platform's recipe in the same tree (a `keel.recipe/v1`). */
  recipe: Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/)),
  /** The registry targets that must run this platform's release before the next step starts. */
  targets: Schema.Array(Schema.String)
})

export const ReleaseDeclaration = Schema.Struct({
  schema: Schema.Literal("keel.release-declaration/v1"),
  version: Schema.String,
  native: Schema.optional(Platform),
  linux: Schema.optional(Platform)
})

/** A tag the adapter releases: `v<major>.<minor>.<patch>` is stable, with a `-<suffix>` a candidate. */
export const TAG_PATTERN = /^v(\d+\.\d+\.\d+)(-[0-9A-Za-z.]+)?$/

export type StepOutcome = "succeeded" | "failed" | "in_progress" | "not_started" | "not_applicable"

export interface StepResult {
  readonly outcome: StepOutcome
  readonly detail: string
  /** Publication: the run and the read-back coordinate of `release.json`. */
  readonly run_id?: string
  readonly coordinate?: { readonly key: string; readonly sha256: string } | null
  /** Delivery: per target. */
  readonly targets?: ProductRollout["targets"]
}

export interface TagAnswer {
  readonly tag: string
  readonly version: string
  readonly kind: "stable" | "candidate"
  readonly revision: string
  readonly native_publication: StepResult
  readonly native_delivery: StepResult
  readonly linux_publication: StepResult
  readonly linux_delivery: StepResult
  readonly ok: boolean
}

/**
 * Where a tag's answer leaves the release: `released`; `in_progress` when a build has not finished and nothing
 * failed (giving the tag again attaches to it); `incomplete` otherwise. The command's exit code follows it.
 */
export const tagStanding = (answer: TagAnswer): "released" | "in_progress" | "incomplete" => {
  if (answer.ok) return "released"
  const all = [answer.native_publication, answer.native_delivery, answer.linux_publication, answer.linux_delivery]
  return all.some((s) => s.outcome === "in_progress") && !all.some((s) => s.outcome === "failed")
    ? "in_progress"
    : "incomplete"
}

const notStarted = (detail: string): StepResult => ({ outcome: "not_started", detail })
const notApplicable: StepResult = { outcome: "not_applicable", detail: "a candidate tag publishes Linux only" }

/**
 * The repository tag workflow (seed 002, "Release submission and delivery" rule 7; docs/releases.md, "The tag
 * adapter"): `ctl release tag <tag> --source <path>`. A stable tag passes the exact-source version check (the tag is
 * checked out and the release declaration at that revision declares the tag's version) and reserves the version
 * and every platform identity first; then native publication (a submit of the native recipe), read back and
 * verified; native delivery to every required native target (declare-version, delivery, service converge); and
 * only after all of those succeed, Linux publication and Linux delivery the same way. Each of the four keeps its
 * own result; one platform's success is not a fleet release, and a refused required target or a missing platform
 * fails the adapter. A candidate tag publishes Linux only, on the `candidate` channel, marked so that its run is
 * never release_store's completion evidence.
 */
export class TagRelease extends Effect.Service<TagRelease>()("fleet/TagRelease", {
  effect: Effect.gen(function* () {
    const runs = yield* ReleaseRun
    const rollout = yield* ReleaseRollout
    const catalog = yield* ReleaseCatalog
    const authority = yield* ReleaseAuthority
    const store = yield* ObjectStore
    const refused = (detail: string) => new TagRefused({ code: "TAG_REFUSED", detail })

    const recipeOf = (source: string, revision: string, file: string) =>
      Effect.gen(function* () {
        const read = yield* recipeAt(source, revision, file)
        if (Option.isNone(read)) return yield* refused(`the tagged tree has no ${file}`)
        if (Either.isLeft(read.value)) return yield* refused(read.value.left)
        return read.value.right.recipe
      })

    /** One platform's publication: the submit of its recipe, then `release.json` read back and verified. */
    const publish = (
      request: { source: string; version: string; tag: string; waitMillis: number },
      recipeFile: string,
      kind: "stable" | "candidate"
    ) =>
      Effect.gen(function* () {
        const submitted = yield* runs
          .submit({
            source: request.source,
            version: request.version,
            channel: kind,
            waitMillis: request.waitMillis,
            recipeFile,
            tag: { name: request.tag, kind }
          })
          .pipe(Effect.either)
        if (Either.isLeft(submitted))
          return {
            outcome: "failed",
            detail: (submitted.left as { detail?: string }).detail ?? String(submitted.left)
          } satisfies StepResult
        const record = submitted.right.record
        if (record.state === "failed")
          return {
            outcome: "failed",
            detail: `${record.failure?.step}: ${record.failure?.detail}`,
            run_id: record.run_id,
            coordinate: null
          } satisfies StepResult
        if (record.state !== "published")
          return {
            outcome: "in_progress",
            detail: `run ${record.run_id} is ${record.state}: give the tag again to attach to it`,
            run_id: record.run_id,
            coordinate: null
          } satisfies StepResult
        const { product, version } = record.inputs
        const trusted = yield* authority.trusted
        const verified = yield* verifyRelease(objectStoreReader(store, product, version), { product, version }, trusted)
        if (!verified.ok || verified.manifest_sha256 === null)
          return {
            outcome: "failed",
            detail: `read back: ${verified.problems.map((p) => `${p.code}: ${p.detail}`).join("; ")}`,
            run_id: record.run_id,
            coordinate: null
          } satisfies StepResult
        return {
          outcome: "succeeded",
          detail: `${product} ${version} published and verified`,
          run_id: record.run_id,
          coordinate: { key: releaseKey(product, version, "release.json"), sha256: verified.manifest_sha256 }
        } satisfies StepResult
      })

    const deliver = (product: string, version: string, targets: ReadonlyArray<string>) =>
      rollout.converge(product, version, targets).pipe(
        Effect.map(
          (result): StepResult => ({
            outcome: result.ok ? "succeeded" : "failed",
            detail: result.detail,
            targets: result.targets
          })
        ),
        Effect.catchTag("RolloutRefused", (e) => Effect.succeed<StepResult>({ outcome: "failed", detail: e.detail }))
      )

    /**
     * The exact-source version check — the declaration at the tagged revision declares the tag's version — and the
     * platforms it declares, each with its recipe read at that revision (a stable tag needs both, different products).
     */
    const platformsAt = (
      request: { readonly source: string; readonly tag: string },
      revision: string,
      version: string,
      kind: "stable" | "candidate"
    ) =>
      Effect.gen(function* () {
        // The exact-source version check: the declaration at the tagged revision declares the tag's version.
        const text = yield* committedFile(request.source, revision, DECLARATION_FILE)
        if (Option.isNone(text)) return yield* refused(`the tagged tree has no ${DECLARATION_FILE}`)
        const declaration = yield* Effect.try({
          try: () => JSON.parse(text.value) as unknown,
          catch: () => refused(`${DECLARATION_FILE} is not JSON`)
        }).pipe(
          Effect.flatMap((json) =>
            Schema.decodeUnknown(ReleaseDeclaration, { onExcessProperty: "error" })(json).pipe(
              Effect.mapError((e) => refused(`${DECLARATION_FILE}: ${ParseResult.TreeFormatter.formatErrorSync(e)}`))
            )
          )
        )
        if (declaration.version !== version)
          return yield* refused(
            `${DECLARATION_FILE} at ${request.tag} declares ${declaration.version}, not ${version}: the tag does not name this source's version`
          )
        if (declaration.linux === undefined) return yield* refused(`${DECLARATION_FILE} declares no linux platform`)
        if (kind === "stable" && declaration.native === undefined)
          return yield* refused(`${DECLARATION_FILE} declares no native platform: a stable release needs both`)
        const linux = {
          ...declaration.linux,
          recipe_: yield* recipeOf(request.source, revision, declaration.linux.recipe)
        }
        const native =
          kind === "stable" && declaration.native !== undefined
            ? { ...declaration.native, recipe_: yield* recipeOf(request.source, revision, declaration.native.recipe) }
            : undefined
        if (native !== undefined && native.recipe_.product === linux.recipe_.product)
          return yield* refused(
            "the native and linux recipes must release different products (one artifact per release)"
          )
        return { linux, native }
      })

    const tag = (request: { readonly source: string; readonly tag: string; readonly waitMillis: number }) =>
      Effect.gen(function* () {
        const parsed = TAG_PATTERN.exec(request.tag)
        if (parsed === null)
          return yield* refused(`${request.tag} is not a release tag (v<major>.<minor>.<patch>[-<suffix>])`)
        const version = `${parsed[1]}${parsed[2] ?? ""}`
        const kind = parsed[2] === undefined ? ("stable" as const) : ("candidate" as const)
        const commits = yield* tagAndHead(request.source, request.tag)
        if (Option.isNone(commits.tag)) return yield* refused(`${request.source} has no tag ${request.tag}`)
        if (Option.getOrUndefined(commits.head) !== commits.tag.value)
          return yield* refused(`${request.tag} is ${commits.tag.value}, not the checked-out commit: check the tag out`)
        const revision = commits.tag.value

        const { linux, native } = yield* platformsAt(request, revision, version, kind)

        // Every identity reserved before anything is published: a refusal here writes nothing.
        for (const platform of native === undefined ? [linux] : [native, linux])
          yield* catalog
            .reserve(platform.recipe_.product, version, [platform.recipe_.platform], revision)
            .pipe(Effect.mapError((e) => refused(e.detail)))

        const answer = (fields: Partial<TagAnswer>): TagAnswer => {
          const result: TagAnswer = {
            tag: request.tag,
            version,
            kind,
            revision,
            native_publication: kind === "stable" ? notStarted("not reached") : notApplicable,
            native_delivery: kind === "stable" ? notStarted("not reached") : notApplicable,
            linux_publication: notStarted("not reached"),
            linux_delivery: kind === "stable" ? notStarted("not reached") : notApplicable,
            ok: false,
            ...fields
          }
          const required = [
            result.native_publication,
            result.native_delivery,
            result.linux_publication,
            result.linux_delivery
          ]
          return { ...result, ok: required.every((r) => r.outcome === "succeeded" || r.outcome === "not_applicable") }
        }
        const input = { source: request.source, version, tag: request.tag, waitMillis: request.waitMillis }

        if (native === undefined) {
          const linuxPublication = yield* publish(input, linux.recipe, "candidate")
          return answer({ linux_publication: linuxPublication })
        }
        const nativePublication = yield* publish(input, native.recipe, "stable")
        if (nativePublication.outcome !== "succeeded") return answer({ native_publication: nativePublication })
        const nativeDelivery = yield* deliver(native.recipe_.product, version, native.targets)
        if (nativeDelivery.outcome !== "succeeded")
          return answer({
            native_publication: nativePublication,
            native_delivery: nativeDelivery,
            linux_publication: notStarted(
              "native delivery did not succeed: stable Linux publication never starts before it"
            )
          })
        const linuxPublication = yield* publish(input, linux.recipe, "stable")
        if (linuxPublication.outcome !== "succeeded")
          return answer({
            native_publication: nativePublication,
            native_delivery: nativeDelivery,
            linux_publication: linuxPublication
          })
        const linuxDelivery = yield* deliver(linux.recipe_.product, version, linux.targets)
        return answer({
          native_publication: nativePublication,
          native_delivery: nativeDelivery,
          linux_publication: linuxPublication,
          linux_delivery: linuxDelivery
        })
      })

    return { tag } as const
  })
}) {}
