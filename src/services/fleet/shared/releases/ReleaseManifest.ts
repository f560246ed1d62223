import { Effect, Schema } from "effect"
import { sha256Hex } from "../../../platform/Digest.js"
import { publicKeyFrom, verify } from "../../../platform/vault/Ed25519.js"

/**
 * A release's canonical publication (docs/releases.md): under `releases/<product>/<version>/`, written create-only
 * and in this order; `release.json` — the signed manifest — is the commit marker: a version without it is not
 * published, whatever else exists.
 */
export const PUBLICATION_ORDER = ["release.tar.gz", "qualification.json", "release.sig", "release.json"] as const
export type PublicationFile = (typeof PUBLICATION_ORDER)[number]

export const releasePrefix = (product: string, version: string) => `releases/${product}/${version}/`
export const releaseKey = (product: string, version: string, file: string) =>
  `${releasePrefix(product, version)}${file}`
export const sourceRevisionKey = (product: string, version: string) =>
  releaseKey(product, version, "source-revision.json")

const Digest = Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/))
const Size = Schema.Int.pipe(Schema.nonNegative())

/** The signed manifest: every other object named by key, size and SHA-256, and the key that signed it. */
export const ReleaseManifest = Schema.Struct({
  schema: Schema.Literal("keel.release/v1"),
  product: Schema.String,
  version: Schema.String,
  channel: Schema.String,
  created_at: Schema.String,
  source: Schema.Struct({
    revision: Schema.String,
    tree: Schema.String,
    sha256: Digest,
    size: Size
  }),
  artifact: Schema.Struct({
    key: Schema.String,
    platform: Schema.String,
    sha256: Digest,
    size: Size,
    /** The executable inside the archive that recovery and delivery install (a path below the archive's root). */
    binary: Schema.String
  }),
  qualification: Schema.Struct({ key: Schema.String, sha256: Digest, size: Size }),
  signature: Schema.Struct({ alg: Schema.Literal("ed25519"), key_id: Schema.String, key: Schema.String })
})
export type ReleaseManifest = typeof ReleaseManifest.Type

/** `release.sig`: the detached Ed25519 signature over the exact bytes of `release.json`. */
export const ReleaseSignature = Schema.Struct({
  alg: Schema.Literal("ed25519"),
  key_id: Schema.String,
  signature: Schema.String
})
export type ReleaseSignature = typeof ReleaseSignature.Type

/** The key a verifier trusts: the registry's `release.signing_key_id` and its public half. */
export interface TrustedKey {
  readonly key_id: string
  readonly public_key: string
}

/** How a verifier reads a release's files, from the object store or from a directory being imported. */
export interface ReleaseReader {
  /** The file's bytes, or null when it does not exist; more than `cap` bytes is a failure. */
  readonly bytes: (file: string, cap: number) => Effect.Effect<Uint8Array | null, ReleaseReadFailed>
  /** The file's SHA-256 and size, read through (never a stored digest), or null when it does not exist. */
  readonly digest: (file: string) => Effect.Effect<{ sha256: string; size: number } | null, ReleaseReadFailed>
}

export class ReleaseReadFailed extends Schema.TaggedError<ReleaseReadFailed>()("ReleaseReadFailed", {
  file: Schema.String,
  detail: Schema.String
}) {}

export interface ReleaseProblem {
  /**
   * missing, manifest_unreadable, signature_unreadable, untrusted_key, signature_invalid, manifest_mismatch,
   * artifact_mismatch, qualification_mismatch, read_failed (docs/releases.md, "Verification").
   */
  readonly code: string
  readonly detail: string
}

export interface ReleaseVerification {
  readonly product: string
  readonly version: string
  readonly ok: boolean
  readonly problems: ReadonlyArray<ReleaseProblem>
  /** The manifest, once its signature verified (null before). */
  readonly manifest: ReleaseManifest | null
  /** SHA-256 of release.json's exact bytes. */
  readonly manifest_sha256: string | null
}

/** The documents are small; anything larger is not one of ours. */
export const DOCUMENT_CAP = 1024 * 1024

/**
 * Verifies a publication the way every reader must (docs/releases.md): release.json's exact bytes against
 * release.sig by a trusted key — never a re-serialisation — then the manifest names the requested product and
 * version and the same key, then the artifact and the qualification hash to what the manifest says.
 */
export const verifyRelease = (
  reader: ReleaseReader,
  wanted: { readonly product: string; readonly version: string },
  trusted: TrustedKey
) =>
  Effect.gen(function* () {
    const problems: Array<ReleaseProblem> = []
    const done = (manifest: ReleaseManifest | null, manifestSha: string | null): ReleaseVerification => ({
      ...wanted,
      ok: problems.length === 0,
      problems,
      manifest,
      manifest_sha256: manifestSha
    })
    const read = <A>(effect: Effect.Effect<A, ReleaseReadFailed>) =>
      effect.pipe(
        Effect.catchAll((e) => {
          problems.push({ code: "read_failed", detail: `${e.file}: ${e.detail}` })
          return Effect.succeed(null)
        })
      )
    const manifestBytes = yield* read(reader.bytes("release.json", DOCUMENT_CAP))
    const signatureBytes = yield* read(reader.bytes("release.sig", DOCUMENT_CAP))
    if (manifestBytes === null || signatureBytes === null) {
      for (const [file, bytes] of [
        ["release.json", manifestBytes],
        ["release.sig", signatureBytes]
      ] as const)
        if (bytes === null && !problems.some((p) => p.detail.startsWith(file)))
          problems.push({ code: "missing", detail: `${file} does not exist: the version is not published` })
      return done(null, null)
    }
    const manifestSha = sha256Hex(manifestBytes)
    const signature = yield* Schema.decodeUnknown(Schema.parseJson(ReleaseSignature))(
      new TextDecoder().decode(signatureBytes)
    ).pipe(Effect.option)
    if (signature._tag === "None") {
      problems.push({ code: "signature_unreadable", detail: "release.sig is not a keel release signature" })
      return done(null, manifestSha)
    }
    if (signature.value.key_id !== trusted.key_id) {
      problems.push({
        code: "untrusted_key",
        detail: `signed by ${signature.value.key_id}; the trusted key is ${trusted.key_id}`
      })
      return done(null, manifestSha)
    }
    const valid = verify(
      publicKeyFrom(trusted.public_key),
      manifestBytes,
      Buffer.from(signature.value.signature, "base64")
    )
    if (!valid) {
      problems.push({ code: "signature_invalid", detail: "release.sig does not verify over release.json's bytes" })
      return done(null, manifestSha)
    }
    const decoded = yield* Schema.decodeUnknown(Schema.parseJson(ReleaseManifest))(
      new TextDecoder().decode(manifestBytes)
    ).pipe(Effect.either)
    if (decoded._tag === "Left") {
      problems.push({
        code: "manifest_unreadable",
        detail: "release.json is signed but not a keel.release/v1 manifest"
      })
      return done(null, manifestSha)
    }
    const manifest = decoded.right
    if (manifest.product !== wanted.product || manifest.version !== wanted.version)
      problems.push({
        code: "manifest_mismatch",
        detail: `the manifest is for ${manifest.product} ${manifest.version}, not ${wanted.product} ${wanted.version}`
      })
    if (manifest.signature.key_id !== signature.value.key_id)
      problems.push({ code: "manifest_mismatch", detail: "the manifest names another signing key than release.sig" })
    for (const [file, expected, code] of [
      ["release.tar.gz", manifest.artifact, "artifact_mismatch"],
      ["qualification.json", manifest.qualification, "qualification_mismatch"]
    ] as const) {
      const expectedKey = releaseKey(wanted.product, wanted.version, file)
      if (expected.key !== expectedKey)
        problems.push({ code: "manifest_mismatch", detail: `the manifest names ${expected.key}, not ${expectedKey}` })
      const actual = yield* read(reader.digest(file))
      if (actual === null) {
        if (!problems.some((p) => p.code === "read_failed" && p.detail.startsWith(file)))
          problems.push({ code: "missing", detail: `${file} does not exist` })
      } else if (actual.sha256 !== expected.sha256 || actual.size !== expected.size)
        problems.push({
          code,
          detail: `${file} is ${actual.size} bytes, sha256 ${actual.sha256}; the manifest says ${expected.size} bytes, ${expected.sha256}`
        })
    }
    return done(manifest, manifestSha)
  })
