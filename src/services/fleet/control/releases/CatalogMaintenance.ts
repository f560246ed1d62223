import * as fs from "node:fs"
import * as path from "node:path"
import { NodeStream } from "@effect/platform-node"
import { Effect, Stream } from "effect"
import { ObjectStoreError } from "../../../../contracts/shared/ObjectErrors.js"
import { ObjectStore } from "../../../platform/objects/ObjectStore.js"
import { type ReleaseProblem, verifyRelease } from "../../shared/releases/ReleaseManifest.js"
import { RunRecords } from "../../shared/releases/RunRecords.js"
import { ReleaseAuthority } from "./ReleaseAuthority.js"
import { ReleaseCatalog, WHOLE_VERSION } from "./ReleaseCatalog.js"
import {
  PUBLISHED_FILES,
  PublicationConflict,
  type PublicationStep,
  ReleasePublisher,
  sourceRevisionBytes
} from "./ReleasePublisher.js"
import { directoryReader, objectStoreReader } from "./ReleaseReaders.js"

export interface SyncedRelease {
  readonly product: string
  readonly version: string
  /** imported: published and recorded now; present: already published and recorded, identical; refused. */
  readonly outcome: "imported" | "present" | "refused"
  readonly problems: ReadonlyArray<ReleaseProblem>
  readonly steps: ReadonlyArray<PublicationStep>
}

export interface AuditedRelease {
  readonly product: string
  readonly version: string
  readonly ok: boolean
  readonly problems: ReadonlyArray<ReleaseProblem>
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$/

const directories = (dir: string) =>
  fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && NAME.test(entry.name))
    .map((entry) => entry.name)
    .sort()

/**
 * `ctl release catalog sync|audit` (docs/releases.md, "Catalog"). Sync imports an existing release tree — each
 * `<product>/<version>/` verified exactly as a reader would (signature by the trusted key over release.json's
 * bytes, manifest for that version, artifact and qualification digests) before anything of it is published, then
 * published create-only in order and recorded with its reservations. Audit re-verifies every catalog entry in the
 * object store and checks the reservations agree with it.
 */
export class CatalogMaintenance extends Effect.Service<CatalogMaintenance>()("fleet/CatalogMaintenance", {
  effect: Effect.gen(function* () {
    const authority = yield* ReleaseAuthority
    const catalog = yield* ReleaseCatalog
    const publisher = yield* ReleasePublisher
    const store = yield* ObjectStore
    const runs = yield* RunRecords

    const syncOne = (dir: string, product: string, version: string) =>
      Effect.gen(function* () {
        const trusted = yield* authority.trusted
        const refused = (problems: ReadonlyArray<ReleaseProblem>): SyncedRelease => ({
          product,
          version,
          outcome: "refused",
          problems,
          steps: []
        })
        const verified = yield* verifyRelease(directoryReader(dir), { product, version }, trusted)
        if (!verified.ok || verified.manifest === null || verified.manifest_sha256 === null)
          return refused(verified.problems)
        const manifest = verified.manifest
        // The source identity published is the signed manifest's, byte for byte: a tree's own file saying another
        // revision (or not JSON at all) is refused before anything is reserved or written.
        const sourceRevision = sourceRevisionBytes(product, version, manifest.source)
        const treeRevision = path.join(dir, "source-revision.json")
        if (fs.existsSync(treeRevision) && !Buffer.from(sourceRevision).equals(fs.readFileSync(treeRevision)))
          return refused([
            {
              code: "source_revision_mismatch",
              detail: `source-revision.json is not what release.json says of its source (revision ${manifest.source.revision})`
            }
          ])
        const reserved = yield* catalog
          .reserve(product, version, [manifest.artifact.platform], manifest.source.revision)
          .pipe(Effect.either)
        if (reserved._tag === "Left") return refused([{ code: "version_reserved", detail: reserved.left.detail }])
        const files: Partial<Record<(typeof PUBLISHED_FILES)[number], Stream.Stream<Uint8Array, Error>>> = {}
        for (const file of PUBLISHED_FILES)
          if (file === "source-revision.json") files[file] = Stream.succeed(sourceRevision)
          else if (fs.existsSync(path.join(dir, file)))
            files[file] = NodeStream.fromReadable<Error, Uint8Array>(
              () => fs.createReadStream(path.join(dir, file)),
              (error) => error as Error
            )
        const published = yield* publisher.publishInOrder(product, version, files).pipe(Effect.either)
        if (published._tag === "Left") {
          const error = published.left
          return refused([
            error instanceof PublicationConflict
              ? { code: "publication_conflict", detail: error.detail }
              : { code: "read_failed", detail: error instanceof ObjectStoreError ? error.detail : error.message }
          ])
        }
        const recorded = yield* catalog
          .record({
            product,
            version,
            channel: manifest.channel,
            platform: manifest.artifact.platform,
            revision: manifest.source.revision,
            tree: manifest.source.tree,
            source_sha256: manifest.source.sha256,
            manifest_sha256: verified.manifest_sha256,
            key_id: manifest.signature.key_id,
            created_at: manifest.created_at
          })
          .pipe(Effect.either)
        if (recorded._tag === "Left") return refused([{ code: "catalog_conflict", detail: recorded.left.detail }])
        // The publication reconciled: a completed run record for its exact source (what release_store asks of a
        // version before reclaiming it), created once, dated by the release itself.
        yield* runs.open(
          {
            product,
            version,
            channel: manifest.channel,
            source: manifest.source,
            manifest_sha256: verified.manifest_sha256
          },
          manifest.created_at,
          { reconciled: { by: "catalog sync", manifest_sha256: verified.manifest_sha256 } },
          "published"
        )
        const fresh = recorded.right === "recorded" || published.right.some((s) => s.outcome === "created")
        return {
          product,
          version,
          outcome: fresh ? ("imported" as const) : ("present" as const),
          problems: [],
          steps: published.right
        }
      })

    /** Imports every `<product>/<version>/` under `root` (or under `root/releases`), one after another. */
    const sync = (root: string, onRelease: (release: SyncedRelease) => Effect.Effect<void> = () => Effect.void) =>
      Effect.gen(function* () {
        yield* authority.trusted // no trusted key: nothing can be verified, refuse the whole sync up front
        const base = fs.existsSync(path.join(root, "releases")) ? path.join(root, "releases") : root
        const releases: Array<SyncedRelease> = []
        for (const product of directories(base))
          for (const version of directories(path.join(base, product))) {
            const release = yield* syncOne(path.join(base, product, version), product, version)
            releases.push(release)
            yield* onRelease(release)
          }
        return { root: base, ok: releases.every((r) => r.outcome !== "refused"), releases }
      })

    /** Every catalog entry re-verified in the object store; every reservation agreeing with the catalog. */
    const audit = Effect.gen(function* () {
      const trusted = yield* authority.trusted
      const entries = yield* catalog.entries
      const reservations = yield* catalog.reservations
      const releases: Array<AuditedRelease> = []
      for (const entry of entries) {
        const verified = yield* verifyRelease(objectStoreReader(store, entry.product, entry.version), entry, trusted)
        const problems = [...verified.problems]
        if (verified.manifest_sha256 !== null && verified.manifest_sha256 !== entry.manifest_sha256)
          problems.push({
            code: "catalog_mismatch",
            detail: `release.json is ${verified.manifest_sha256}; the catalog recorded ${entry.manifest_sha256}`
          })
        for (const platform of [WHOLE_VERSION, entry.platform]) {
          const held = reservations.find(
            (r) => r.product === entry.product && r.version === entry.version && r.platform === platform
          )
          if (held === undefined)
            problems.push({ code: "reservation_missing", detail: `no reservation of ${platform} for this version` })
          else if (held.revision !== entry.revision)
            problems.push({
              code: "reservation_mismatch",
              detail: `${platform} is reserved for ${held.revision}; the catalog records ${entry.revision}`
            })
        }
        releases.push({ product: entry.product, version: entry.version, ok: problems.length === 0, problems })
      }
      return { ok: releases.every((r) => r.ok), trusted_key_id: trusted.key_id, releases }
    })

    return { sync, audit } as const
  })
}) {}
