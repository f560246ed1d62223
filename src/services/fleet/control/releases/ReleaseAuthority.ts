import { Effect, Schema } from "effect"
import { generateKeyPair } from "../../../platform/vault/Ed25519.js"
import { Vault } from "../../../platform/vault/Vault.js"
import { FleetRegistry } from "../../shared/registry/Registry.js"
import type { ReleaseSettings } from "../../shared/registry/Schema.js"
import type { ReleaseSignature, TrustedKey } from "../../shared/releases/ReleaseManifest.js"

/** The release authority is not configured, or its key is not the trusted one: nothing is signed or trusted. */
export class ReleaseAuthorityUnavailable extends Schema.TaggedError<ReleaseAuthorityUnavailable>()(
  "ReleaseAuthorityUnavailable",
  { code: Schema.Literal("RELEASE_AUTHORITY_UNAVAILABLE"), detail: Schema.String }
) {}

/** The vault already holds an item of that name: a signing key is never replaced (readers trust it by id). */
export class SigningKeyExists extends Schema.TaggedError<SigningKeyExists>()("SigningKeyExists", {
  item: Schema.String,
  detail: Schema.String
}) {}

/** The field of the signing item that holds the private key (seed 002: `private_key`). */
export const SIGNING_KEY_FIELD = "private_key"

/**
 * The release authority of the registry's `settings.release`: `signing_key_item` names the vault item whose key
 * signs (inside the vault), `signing_key_id` the key readers trust. The item's key must be that key: a vault holding
 * another key signs nothing, rather than releases no reader would accept.
 */
export class ReleaseAuthority extends Effect.Service<ReleaseAuthority>()("fleet/ReleaseAuthority", {
  effect: Effect.gen(function* () {
    const registry = yield* FleetRegistry
    const vault = yield* Vault
    const unavailable = (detail: string) =>
      new ReleaseAuthorityUnavailable({ code: "RELEASE_AUTHORITY_UNAVAILABLE", detail })

    const configuredBy = (settings: typeof ReleaseSettings.Type) =>
      settings.signing_key_item === undefined || settings.signing_key_id === undefined
        ? Effect.fail(
            unavailable(
              "settings.release.signing_key_item and settings.release.signing_key_id must both be set (docs/releases.md)"
            )
          )
        : Effect.succeed({ item: settings.signing_key_item, keyId: settings.signing_key_id })

    const configured = Effect.gen(function* () {
      const snapshot = yield* registry.read({ allowCached: true }).pipe(Effect.mapError((e) => unavailable(e.detail)))
      return yield* configuredBy(snapshot.registry.settings.release)
    })

    /** The key `settings` trust: its id from them, its public half from the vault item, which must match. */
    const trustedBy = (settings: typeof ReleaseSettings.Type) =>
      Effect.gen(function* () {
        const { item, keyId } = yield* configuredBy(settings)
        return yield* publicOf(item, keyId)
      })

    const publicOf = (item: string, keyId: string) =>
      Effect.gen(function* () {
        const key = yield* vault
          .publicKey(item, SIGNING_KEY_FIELD)
          .pipe(Effect.mapError((e) => unavailable(`the signing key: ${e.detail}`)))
        if (key.key_id !== keyId)
          return yield* unavailable(
            `the vault item ${item} holds key ${key.key_id}, not the trusted ${keyId} (settings.release.signing_key_id)`
          )
        return key
      })

    /** The trusted key of the current registry (or its last valid snapshot). */
    const trusted: Effect.Effect<TrustedKey, ReleaseAuthorityUnavailable> = Effect.flatMap(
      configured,
      ({ item, keyId }) => publicOf(item, keyId)
    )

    /** `release.sig` for exactly these bytes (Ed25519, inside the vault). */
    const sign = (bytes: Uint8Array) =>
      Effect.gen(function* () {
        const key = yield* trusted
        const { item } = yield* configured
        const signed = yield* vault
          .sign(item, SIGNING_KEY_FIELD, bytes)
          .pipe(Effect.mapError((e) => unavailable(`signing: ${e.detail}`)))
        return {
          alg: "ed25519",
          key_id: key.key_id,
          signature: Buffer.from(signed.signature).toString("base64")
        } satisfies ReleaseSignature
      })

    /**
     * A new Ed25519 signing key in the vault item `item` (its private half stays there). An item of that name is
     * never replaced: releases signed by the key it holds would stop verifying for every reader that trusts it.
     */
    const createSigningKey = (item: string) =>
      Effect.gen(function* () {
        const existing = yield* vault.listItems
        if (existing.some((i) => i.name === item))
          return yield* new SigningKeyExists({
            item,
            detail: `the vault already holds ${item}: a signing key is never replaced here`
          })
        const pair = generateKeyPair()
        yield* vault.putItem(item, { [SIGNING_KEY_FIELD]: pair.private_key })
        return { item, key_id: pair.key_id, public_key: pair.public_key }
      })

    return { trusted, trustedBy, sign, createSigningKey } as const
  })
}) {}
