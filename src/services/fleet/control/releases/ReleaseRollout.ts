import { Clock, Duration, Effect, Option, Schema } from "effect"
import * as Yaml from "yaml"
import { ObjectStore } from "../../../platform/objects/ObjectStore.js"
import { FleetRegistry } from "../../shared/registry/Registry.js"
import type { FleetRegistryDocument, Target } from "../../shared/registry/Schema.js"
import { canonicalBytes } from "../../shared/releases/CanonicalJson.js"
import { releaseKey, verifyRelease } from "../../shared/releases/ReleaseManifest.js"
import { RunRecords, runIdOf } from "../../shared/releases/RunRecords.js"
import { ServiceReconciler } from "../reconciler/ServiceReconciler.js"
import { RegistryWriter } from "../registry/RegistryWriter.js"
import { BinaryRecovery, type DeliveryObservation } from "./BinaryRecovery.js"
import { ReleaseAuthority } from "./ReleaseAuthority.js"
import { ReleaseCatalog } from "./ReleaseCatalog.js"
import { objectStoreReader } from "./ReleaseReaders.js"
import { CHANNEL_PATTERN } from "./ReleaseRun.js"
import { VersionDeclaration } from "./VersionDeclaration.js"

/** A promotion or rollout that cannot start: nothing was written. */
export class RolloutRefused extends Schema.TaggedError<RolloutRefused>()("RolloutRefused", {
  code: Schema.Literal("ROLLOUT_REFUSED"),
  detail: Schema.String
}) {}

/** `release_control` is at another generation than the promoter read: re-read and decide again. */
export class PromotionConflict extends Schema.TaggedError<PromotionConflict>()("PromotionConflict", {
  code: Schema.Literal("PROMOTION_CONFLICT"),
  generation: Schema.Int,
  detail: Schema.String
}) {}

/** The key of a rollout's completion record: one per product, version and `release_control` generation. */
export const deploymentKey = (product: string, version: string, generation: number) =>
  `releases/${product}/${version}/deployments/${generation}/deployment.json`

export interface TargetRollout {
  readonly target: string
  readonly binary: string
  readonly path: string
  /** `declared` now, or `already` declared at the promoted version. */
  readonly declaration: "declared" | "already" | "failed"
  /** `current`: the host already reported the promoted release; `delivered` now; `failed`. */
  readonly delivery: "current" | "delivered" | "failed" | "not_run"
  readonly services: ReadonlyArray<{ readonly name: string; readonly ok: boolean; readonly detail: string }>
  readonly observed: DeliveryObservation | null
  readonly ok: boolean
  readonly detail: string
}

export interface ProductRollout {
  readonly product: string
  readonly version: string
  readonly channel: string
  readonly generation: number
  readonly manifest: { readonly key: string; readonly sha256: string } | null
  readonly artifact_sha256: string | null
  readonly targets: ReadonlyArray<TargetRollout>
  readonly deployment: { readonly key: string; readonly outcome: "created" | "present" } | null
  readonly ok: boolean
  readonly detail: string
}

export type RolloutProgress = { readonly product: string; readonly target: string; readonly step: string }

const ATTEMPTS = 3

/**
 * The release agent (seed 002, "Release submission and delivery" rule 5; docs/releases.md, "Rollout"): `promote`
 * moves `release_control` to a new generation by compare-and-set; `rollout` converges every declared target of
 * each promoted product — its binary's declared version (`host declare-version`), the exact signed release
 * delivered where the host does not already report it (`host release`: verify, stage, rename, probe, receipt),
 * its services on that binary converged (`service converge --apply`) — and writes `deployment.json` only when
 * every declared target reports the promoted version, artifact digest and manifest digest exactly. Every step
 * reads the world first, so a rollout stopped anywhere converges when run again, delivering nothing twice.
 */
export class ReleaseRollout extends Effect.Service<ReleaseRollout>()("fleet/ReleaseRollout", {
  effect: Effect.gen(function* () {
    const registry = yield* FleetRegistry
    const writer = yield* RegistryWriter
    const catalog = yield* ReleaseCatalog
    const store = yield* ObjectStore
    const authority = yield* ReleaseAuthority
    const declaration = yield* VersionDeclaration
    const delivery = yield* BinaryRecovery
    const reconciler = yield* ServiceReconciler
    const runs = yield* RunRecords
    const refused = (detail: string) => new RolloutRefused({ code: "ROLLOUT_REFUSED", detail })

    /**
     * The delivery state in the release's run record(s) (`steps.delivery`): each published run of this product and
     * version, by compare-and-set; a record another writer changed meanwhile is left to the next rollout.
     */
    const recordDelivery = (product: string, version: string, delivery: Record<string, unknown>) =>
      Effect.gen(function* () {
        const submitted = (yield* catalog.submissions).filter((s) => s.product === product && s.version === version)
        const reconciled = (yield* catalog.entries).filter((e) => e.product === product && e.version === version)
        const ids = new Set([
          ...submitted.map((s) => s.run_id),
          ...reconciled.map((e) =>
            runIdOf({
              product,
              version,
              channel: e.channel,
              source: { revision: e.revision, tree: e.tree, sha256: e.source_sha256, size: 0 },
              manifest_sha256: e.manifest_sha256
            })
          )
        ])
        const now = new Date(yield* Clock.currentTimeMillis).toISOString()
        for (const id of ids) {
          const found = yield* runs.read(id)
          if (Option.isNone(found) || found.value.record.state !== "published") continue
          yield* runs
            .update(
              id,
              found.value.record.generation,
              (r) => ({ ...r, steps: { ...r.steps, delivery: { ...delivery, at: now } } }),
              now
            )
            .pipe(Effect.ignore)
        }
      }).pipe(Effect.catchAll(() => Effect.void))

    /** The release verified in the store: its manifest and digest, or why not. */
    const verified = (product: string, version: string, settings: FleetRegistryDocument["settings"]["release"]) =>
      Effect.gen(function* () {
        const trusted = yield* authority.trustedBy(settings).pipe(Effect.mapError((e) => refused(e.detail)))
        const result = yield* verifyRelease(objectStoreReader(store, product, version), { product, version }, trusted)
        if (!result.ok || result.manifest === null || result.manifest_sha256 === null)
          return yield* refused(
            `${product} ${version} does not verify: ${result.problems.map((p) => `${p.code}: ${p.detail}`).join("; ")}`
          )
        return { manifest: result.manifest, sha256: result.manifest_sha256 }
      })

    /**
     * `ctl release promote <product> <version>`: `release_control.versions[product] = version` (and the channel),
     * generation + 1, written through the registry's compare-and-set — only for a release the catalog records and
     * the store verifies. With `expectGeneration`, refused unless `release_control` is still at it.
     */
    const promote = (request: {
      readonly product: string
      readonly version: string
      readonly channel?: string | undefined
      readonly expectGeneration?: number | undefined
    }) =>
      Effect.gen(function* () {
        const entry = (yield* catalog.entries).find(
          (e) => e.product === request.product && e.version === request.version
        )
        if (entry === undefined) return yield* refused(`the catalog records no ${request.product} ${request.version}`)
        // A release is never relabelled: its channel is the signed manifest's (a candidate reaches stable by being
        // published on stable, its own path; seed rule 7).
        if (request.channel !== undefined && request.channel !== entry.channel)
          return yield* refused(
            CHANNEL_PATTERN.test(request.channel)
              ? `${request.product} ${request.version} is a ${entry.channel} release: it is promoted on ${entry.channel} only (publish it on ${request.channel} to promote it there)`
              : `channel ${JSON.stringify(request.channel.slice(0, 40))} is not [a-z][a-z0-9-]* (at most 32)`
          )
        for (let attempt = 1; ; attempt++) {
          const snapshot = yield* registry.read().pipe(Effect.mapError((e) => refused(`the registry: ${e.detail}`)))
          const control = snapshot.registry.release_control
          if (request.expectGeneration !== undefined && control.generation !== request.expectGeneration)
            return yield* new PromotionConflict({
              code: "PROMOTION_CONFLICT",
              generation: control.generation,
              detail: `release_control is at generation ${control.generation}, not ${request.expectGeneration}`
            })
          yield* verified(request.product, request.version, snapshot.registry.settings.release)
          const channel = request.channel ?? entry.channel
          const generation = control.generation + 1
          const change = (text: string) => {
            const document = Yaml.parseDocument(text)
            document.setIn(["release_control", "generation"], generation)
            document.setIn(["release_control", "channel"], channel)
            document.setIn(["release_control", "versions", request.product], request.version)
            return document.toString()
          }
          const written = yield* writer
            .update(snapshot.digest, change, `promote ${request.product} ${request.version} (generation ${generation})`)
            .pipe(Effect.either)
          if (written._tag === "Right")
            return {
              product: request.product,
              version: request.version,
              channel,
              generation,
              previous: control.versions[request.product] ?? null,
              ...written.right
            }
          if (written.left._tag !== "RegistryConflict" || attempt >= ATTEMPTS)
            return yield* refused(`the registry was not written: ${written.left.detail}`)
        }
      })

    const matches = (
      seen: DeliveryObservation,
      want: { product: string; version: string; artifact: string; manifest: string }
    ) =>
      seen.receipt !== null &&
      seen.receipt.product === want.product &&
      seen.receipt.version === want.version &&
      seen.receipt.artifact_sha256 === want.artifact &&
      seen.receipt.manifest_sha256 === want.manifest &&
      seen.sha256 === seen.receipt.binary_sha256

    /** What a target must report of the release: exactly this product, version, artifact and manifest. */
    type Wanted = { product: string; version: string; artifact: string; manifest: string }

    /** 2. Delivery, unless the host already reports exactly this release: its outcome, why it failed, the report before. */
    const deliverTo = (target: Target, binary: Target["binaries"][number], want: Wanted) =>
      Effect.gen(function* () {
        const before = yield* delivery.observe(target, binary.path)
        if (matches(before, want)) return { outcome: "current" as TargetRollout["delivery"], failure: "", before }
        const delivered = yield* delivery
          .recover({
            target: target.name,
            release: Option.some(want.version),
            bundledRegistry: false,
            binary: binary.name,
            hostRecovery: false
          })
          .pipe(Effect.either)
        const outcome: TargetRollout["delivery"] =
          delivered._tag === "Right" && delivered.right.ok ? "delivered" : "failed"
        const failure =
          delivered._tag === "Left"
            ? delivered.left.detail
            : delivered.right.ok
              ? ""
              : delivered.right.steps
                  .filter((s) => !s.ok)
                  .map((s) => `${s.step}: ${s.detail}`)
                  .join("; ")
        return { outcome, failure, before }
      })

    /** 3. The services running that binary, converged onto it (after a delivery only). */
    const convergeServices = (target: Target, binary: Target["binaries"][number]) =>
      Effect.gen(function* () {
        const services: Array<TargetRollout["services"][number]> = []
        for (const service of target.services.filter((s) => s.program === binary.path)) {
          const converged = yield* reconciler.converge(target.name, service.name, true).pipe(Effect.either)
          const failed =
            converged._tag === "Left"
              ? converged.left.detail
              : converged.right.services
                  .filter((s) => s.execution.status === "failed" || s.execution.status === "refused")
                  .map((s) => s.execution.error ?? s.execution.status)
                  .join("; ")
          services.push({ name: service.name, ok: failed === "", detail: failed === "" ? "converged" : failed })
        }
        return services
      })

    /** One target's binary to the release: declaration, delivery, its services, and what it reports then. */
    const rolloutTarget = (
      target: Target,
      binary: Target["binaries"][number],
      want: Wanted,
      step: (target: string, name: string) => Effect.Effect<void>
    ) =>
      Effect.gen(function* () {
        const row = { target: target.name, binary: binary.name, path: binary.path }
        // 1. The host's declared version (registry compare-and-set; nothing written when it already is).
        let declarationOutcome: TargetRollout["declaration"] = "already"
        if (binary.version !== want.version) {
          const written = yield* declaration.declare(target.name, binary.name, want.version).pipe(Effect.either)
          if (written._tag === "Left")
            return {
              ...row,
              declaration: "failed",
              delivery: "not_run",
              services: [],
              observed: null,
              ok: false,
              detail: written.left.detail
            } satisfies TargetRollout
          declarationOutcome = "declared"
          yield* step(target.name, "declared")
        }
        const delivered = yield* deliverTo(target, binary, want)
        if (delivered.outcome !== "current") yield* step(target.name, delivered.outcome)
        const services = delivered.outcome === "delivered" ? yield* convergeServices(target, binary) : []
        // 4. What the host reports now.
        const after = delivered.outcome === "current" ? delivered.before : yield* delivery.observe(target, binary.path)
        const ok = matches(after, want) && services.every((s) => s.ok)
        return {
          ...row,
          declaration: declarationOutcome,
          delivery: delivered.outcome,
          services,
          observed: after,
          ok,
          detail: ok
            ? `reports ${want.product} ${want.version}, artifact ${want.artifact}, manifest ${want.manifest}`
            : delivered.failure || `reports ${after.detail}, not ${want.product} ${want.version} exactly`
        } satisfies TargetRollout
      })

    /** 5. The completion record, once every target reports the release; written once (create-only) per generation. */
    const writeDeployment = (
      document: FleetRegistryDocument,
      want: Wanted,
      artifactKey: string,
      results: ReadonlyArray<TargetRollout>
    ) =>
      Effect.gen(function* () {
        const generation = document.release_control.generation
        const key = deploymentKey(want.product, want.version, generation)
        const existing = yield* store.head(key)
        if (Option.isSome(existing)) return { key, outcome: "present" as const }
        const now = yield* Clock.currentTimeMillis
        const body = canonicalBytes({
          schema: "keel.deployment/v1",
          product: want.product,
          version: want.version,
          channel: document.release_control.channel,
          generation,
          manifest: { key: releaseKey(want.product, want.version, "release.json"), sha256: want.manifest },
          artifact: { key: artifactKey, sha256: want.artifact },
          targets: results.map((r) => ({
            target: r.target,
            binary: r.binary,
            path: r.path,
            sha256: r.observed?.sha256 ?? null
          })),
          completed_at: new Date(now).toISOString()
        })
        const written = yield* store.putIfAbsent(key, body)
        return { key, outcome: written.created ? ("created" as const) : ("present" as const) }
      })

    /** One product to its promoted version on every target that declares a binary of it. */
    const rolloutProduct = (
      document: FleetRegistryDocument,
      product: string,
      version: string,
      options: {
        readonly stepPauseMillis: number
        readonly onProgress?: ((p: RolloutProgress) => Effect.Effect<void>) | undefined
        /** Only these targets (the tag adapter's required ones); default every target declaring the product. */
        readonly only?: ReadonlySet<string> | undefined
        /** Whether the completion record is written (a rollout: yes; the tag adapter's delivery: no). */
        readonly deployment?: boolean | undefined
      }
    ) =>
      Effect.gen(function* () {
        const generation = document.release_control.generation
        const base = { product, version, channel: document.release_control.channel, generation }
        const release = yield* verified(product, version, document.settings.release).pipe(Effect.either)
        if (release._tag === "Left")
          return {
            ...base,
            manifest: null,
            artifact_sha256: null,
            targets: [],
            deployment: null,
            ok: false,
            detail: release.left.detail
          } satisfies ProductRollout
        const want: Wanted = {
          product,
          version,
          artifact: release.right.manifest.artifact.sha256,
          manifest: release.right.sha256
        }
        const step = (target: string, name: string) =>
          Effect.zipRight(
            options.onProgress === undefined ? Effect.void : options.onProgress({ product, target, step: name }),
            options.stepPauseMillis > 0 ? Effect.sleep(Duration.millis(options.stepPauseMillis)) : Effect.void
          )
        const declared = document.targets
          .filter((target) => options.only === undefined || options.only.has(target.name))
          .flatMap((target) =>
            target.binaries.filter((b) => b.product === product).map((binary) => ({ target, binary }))
          )
        const results: Array<TargetRollout> = []
        for (const { binary, target } of declared) results.push(yield* rolloutTarget(target, binary, want, step))
        const ok = declared.length > 0 && results.every((r) => r.ok)
        const deployment: ProductRollout["deployment"] =
          ok && options.deployment !== false
            ? yield* writeDeployment(document, want, release.right.manifest.artifact.key, results)
            : null
        yield* recordDelivery(product, version, {
          generation: options.deployment === false ? null : generation,
          ok,
          targets: results.map((r) => ({ target: r.target, binary: r.binary, delivery: r.delivery, ok: r.ok })),
          deployment: deployment?.key ?? null
        })
        return {
          ...base,
          manifest: { key: releaseKey(product, version, "release.json"), sha256: want.manifest },
          artifact_sha256: want.artifact,
          targets: results,
          deployment,
          ok,
          detail:
            declared.length === 0
              ? `no target declares a binary of ${product}`
              : ok
                ? `every declared target reports ${product} ${version}`
                : `${results.filter((r) => !r.ok).length} of ${results.length} target(s) do not report ${product} ${version}`
        } satisfies ProductRollout
      })

    /** `ctl release rollout [--product P]`: every promoted product (or one) converged, in name order. */
    const rollout = (options: {
      readonly product?: string | undefined
      readonly stepPauseMillis?: number
      readonly onProgress?: (p: RolloutProgress) => Effect.Effect<void>
    }) =>
      Effect.gen(function* () {
        const snapshot = yield* registry.read().pipe(Effect.mapError((e) => refused(`the registry: ${e.detail}`)))
        const control = snapshot.registry.release_control
        const products = Object.keys(control.versions)
          .filter((p) => options.product === undefined || p === options.product)
          .sort()
        if (options.product !== undefined && products.length === 0)
          return yield* refused(`release_control promotes no version of ${options.product}`)
        const results: Array<ProductRollout> = []
        for (const product of products)
          results.push(
            yield* rolloutProduct(snapshot.registry, product, control.versions[product]!, {
              stepPauseMillis: options.stepPauseMillis ?? 0,
              onProgress: options.onProgress
            })
          )
        return { generation: control.generation, products: results, ok: results.every((r) => r.ok) }
      })

    /**
     * The tag adapter's native or Linux delivery: `targets` (each must declare a binary of `product`) converged to
     * `version` — declaration, delivery where the host does not report it, services — without a deployment record.
     */
    const converge = (product: string, version: string, targets: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const snapshot = yield* registry.read().pipe(Effect.mapError((e) => refused(`the registry: ${e.detail}`)))
        const missing = targets.filter(
          (name) =>
            !snapshot.registry.targets.some((t) => t.name === name && t.binaries.some((b) => b.product === product))
        )
        if (missing.length > 0)
          return yield* refused(
            `required target(s) ${missing.join(", ")} declare no binary of ${product} (targets[].binaries)`
          )
        return yield* rolloutProduct(snapshot.registry, product, version, {
          stepPauseMillis: 0,
          only: new Set(targets),
          deployment: false
        })
      })

    return { promote, rollout, converge } as const
  })
}) {}
