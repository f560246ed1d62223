import * as fs from "node:fs"
import { NodeStream } from "@effect/platform-node"
import { Effect, Option, Schema, Stream } from "effect"
import type { ObjectStoreError } from "../../../../contracts/shared/ObjectErrors.js"
import { fileDigest, sha256Hex } from "../../../platform/Digest.js"
import { ObjectStore } from "../../../platform/objects/ObjectStore.js"
import { canonicalBytes } from "../../shared/releases/CanonicalJson.js"
import { PUBLICATION_ORDER, type ReleaseManifest, releaseKey } from "../../shared/releases/ReleaseManifest.js"
import { ReleaseAuthority } from "./ReleaseAuthority.js"

/** An object of the publication exists with other bytes: a version's objects never change (nothing was written). */
export class PublicationConflict extends Schema.TaggedError<PublicationConflict>()("PublicationConflict", {
  code: Schema.Literal("PUBLICATION_CONFLICT"),
  key: Schema.String,
  detail: Schema.String
}) {}

export type PublicationStep = { readonly file: string; readonly outcome: "created" | "present" }

/** The files `publishInOrder` writes, in that order: the source identity first, then the canonical four. */
export const PUBLISHED_FILES = ["source-revision.json", ...PUBLICATION_ORDER] as const

/**
 * A version's `source-revision.json`, canonical: what its signed manifest says of its source, exactly. A catalog
 * sync publishes these bytes and refuses a tree whose own file says anything else.
 */
export const sourceRevisionBytes = (
  product: string,
  version: string,
  source: { readonly revision: string; readonly tree: string; readonly sha256: string; readonly size: number }
) =>
  canonicalBytes({
    schema: "keel.source-revision/v1",
    product,
    version,
    revision: source.revision,
    tree: source.tree,
    sha256: source.sha256,
    size: source.size
  })

export interface NewRelease {
  readonly product: string
  readonly version: string
  readonly channel: string
  /** Fixed by the caller (its run's record), so a resumed publication signs the very same bytes. */
  readonly createdAt: string
  readonly source: ReleaseManifest["source"]
  readonly platform: string
  /** The executable's path inside the archive. */
  readonly binary: string
  /** The archive on this host: streamed, never held in memory. */
  readonly artifactFile: string
  readonly qualification: Record<string, unknown>
}

const fileStream = (file: string) =>
  NodeStream.fromReadable<Error, Uint8Array>(
    () => fs.createReadStream(file),
    (error) => error as Error
  )

/**
 * Canonical publication (docs/releases.md): every object create-only, strictly in order — `source-revision.json`,
 * `release.tar.gz`, `qualification.json`, `release.sig`, `release.json` — each written only once its predecessors
 * exist, so `release.json`, the commit marker, never exists before the others. An object already there with the
 * same bytes is a publication resumed (kept); with other bytes it is a conflict that stops the publication.
 */
export class ReleasePublisher extends Effect.Service<ReleasePublisher>()("fleet/ReleasePublisher", {
  effect: Effect.gen(function* () {
    const store = yield* ObjectStore
    const authority = yield* ReleaseAuthority

    const createOnly = <E>(key: string, body: Stream.Stream<Uint8Array, E>) =>
      Effect.gen(function* () {
        const outcome = yield* store.write(key, body, { kind: "absent" })
        if (outcome.written) return "created" as const
        const existing = Option.getOrUndefined(outcome.head)
        if (existing !== undefined && existing.sha256 === outcome.received.sha256) return "present" as const
        return yield* new PublicationConflict({
          code: "PUBLICATION_CONFLICT",
          key,
          detail: `${key} exists with sha256 ${existing?.sha256 ?? "?"}, not ${outcome.received.sha256}: published objects never change`
        })
      })

    /** Writes the given files of a version in publication order, stopping at the first failure. */
    const publishInOrder = <E>(
      product: string,
      version: string,
      files: Partial<Record<(typeof PUBLISHED_FILES)[number], Stream.Stream<Uint8Array, E>>>,
      afterEach: (step: PublicationStep) => Effect.Effect<void> = () => Effect.void
    ): Effect.Effect<ReadonlyArray<PublicationStep>, PublicationConflict | ObjectStoreError | E> =>
      Effect.gen(function* () {
        const steps: Array<PublicationStep> = []
        for (const file of PUBLISHED_FILES) {
          const body = files[file]
          if (body === undefined) continue
          const step = { file, outcome: yield* createOnly(releaseKey(product, version, file), body) }
          steps.push(step)
          yield* afterEach(step)
        }
        return steps
      })

    /**
     * Builds, signs (in the vault) and publishes a new release from an archive on this host; `afterEach` runs
     * once each object is in place (a run's progress and its step pause).
     */
    const publishRelease = (
      release: NewRelease,
      afterEach: (step: PublicationStep) => Effect.Effect<void> = () => Effect.void
    ) =>
      Effect.gen(function* () {
        const artifact = yield* Effect.promise(() => fileDigest(release.artifactFile))
        const qualification = canonicalBytes(release.qualification)
        const trusted = yield* authority.trusted
        const manifest: ReleaseManifest = {
          schema: "keel.release/v1",
          product: release.product,
          version: release.version,
          channel: release.channel,
          created_at: release.createdAt,
          source: release.source,
          artifact: {
            key: releaseKey(release.product, release.version, "release.tar.gz"),
            platform: release.platform,
            sha256: artifact.sha256,
            size: artifact.size,
            binary: release.binary
          },
          qualification: {
            key: releaseKey(release.product, release.version, "qualification.json"),
            sha256: sha256Hex(qualification),
            size: qualification.byteLength
          },
          signature: {
            alg: "ed25519",
            key_id: trusted.key_id,
            key: releaseKey(release.product, release.version, "release.sig")
          }
        }
        const manifestBytes = canonicalBytes(manifest)
        const signature = canonicalBytes(yield* authority.sign(manifestBytes))
        const sourceRevision = sourceRevisionBytes(release.product, release.version, release.source)
        const steps = yield* publishInOrder(
          release.product,
          release.version,
          {
            "source-revision.json": Stream.succeed(sourceRevision),
            "release.tar.gz": fileStream(release.artifactFile),
            "qualification.json": Stream.succeed(qualification),
            "release.sig": Stream.succeed(signature),
            "release.json": Stream.succeed(manifestBytes)
          },
          afterEach
        )
        return { manifest, manifest_sha256: sha256Hex(manifestBytes), steps }
      })

    return { createOnly, publishInOrder, publishRelease } as const
  })
}) {}
