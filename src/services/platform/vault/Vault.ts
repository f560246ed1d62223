import { HttpApiSchema } from "@effect/platform"
import { Context, type Effect, Schema } from "effect"

export const VaultAction = Schema.String.pipe(Schema.pattern(/^[a-z][a-z0-9-]{0,62}$/))

export const Grant = Schema.Struct({
  id: Schema.String,
  /** Who uses the grant (a host's beacon writer, the runner installer, …). */
  consumer: Schema.String,
  /** Registry actions the grant's tokens carry (`host-health-write`, …). */
  actions: Schema.Array(Schema.String),
  /** Items whose fields the grant's tokens may read. */
  items: Schema.Array(Schema.String),
  /** Hosts the actions apply to (a beacon grant names exactly its own host). */
  hosts: Schema.Array(Schema.String),
  created_at: Schema.Number,
  expires_at: Schema.Number,
  revoked_at: Schema.NullOr(Schema.Number)
})
export type Grant = typeof Grant.Type

/** What a grant holder keeps (mode 0600) and exchanges for short-lived tokens. */
export const GrantCredential = Schema.Struct({
  grant_id: Schema.String,
  consumer: Schema.String,
  secret: Schema.String,
  /** What the grant allows (not secret): lets a holder refuse an over-broad grant before using it. */
  scope: Schema.optional(
    Schema.Struct({
      actions: Schema.Array(Schema.String),
      hosts: Schema.Array(Schema.String),
      items: Schema.Array(Schema.String)
    })
  )
})
export type GrantCredential = typeof GrantCredential.Type

export interface IssuedToken {
  readonly token: string
  readonly expiresAt: number
  readonly grant: Grant
}

export class VaultDenied extends Schema.TaggedError<VaultDenied>()(
  "VaultDenied",
  { code: Schema.Literal("VAULT_DENIED"), detail: Schema.String },
  HttpApiSchema.annotations({ status: 401 })
) {}

export class VaultForbidden extends Schema.TaggedError<VaultForbidden>()(
  "VaultForbidden",
  { code: Schema.Literal("VAULT_FORBIDDEN"), detail: Schema.String },
  HttpApiSchema.annotations({ status: 403 })
) {}

export class VaultItemNotFound extends Schema.TaggedError<VaultItemNotFound>()(
  "VaultItemNotFound",
  { code: Schema.Literal("VAULT_ITEM_NOT_FOUND"), item: Schema.String, detail: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}

/** Stored ciphertext failed authentication: tampered with, or encrypted under another key. */
export class VaultCorrupt extends Schema.TaggedError<VaultCorrupt>()("VaultCorrupt", {
  code: Schema.Literal("VAULT_CORRUPT"),
  item: Schema.String,
  detail: Schema.String
}) {}

/** The field holds no usable signing key (not base64 PKCS#8, or not Ed25519). */
export class VaultKeyRefused extends Schema.TaggedError<VaultKeyRefused>()("VaultKeyRefused", {
  code: Schema.Literal("VAULT_KEY_REFUSED"),
  item: Schema.String,
  detail: Schema.String
}) {}

export class VaultInvalid extends Schema.TaggedError<VaultInvalid>()(
  "VaultInvalid",
  { code: Schema.Literal("VAULT_INVALID"), detail: Schema.String },
  HttpApiSchema.annotations({ status: 400 })
) {}

/**
 * The secret vault port. The embedded adapter (EmbeddedVault) keeps items encrypted in SQL; a real
 * Vault server could stand behind the same interface. Secret values only ever leave through
 * `readField` (to an authorized token) and `getItem` (operators, via `ctl vault item get`).
 */
export class Vault extends Context.Tag("platform/Vault")<
  Vault,
  {
    readonly putItem: (name: string, fields: Record<string, string>) => Effect.Effect<void, VaultInvalid>
    readonly getItem: (name: string) => Effect.Effect<Record<string, string>, VaultItemNotFound | VaultCorrupt>
    readonly listItems: Effect.Effect<ReadonlyArray<{ readonly name: string; readonly fields: ReadonlyArray<string> }>>
    readonly removeItem: (name: string) => Effect.Effect<boolean>
    readonly createGrant: (grant: {
      readonly consumer: string
      readonly actions: ReadonlyArray<string>
      readonly items: ReadonlyArray<string>
      readonly hosts: ReadonlyArray<string>
      readonly ttlMillis: number
    }) => Effect.Effect<{ readonly grant: Grant; readonly credential: GrantCredential }, VaultInvalid>
    readonly listGrants: Effect.Effect<ReadonlyArray<Grant>>
    readonly revokeGrant: (id: string) => Effect.Effect<boolean>
    /** A grant credential for a token that lives at most the token TTL and never past its grant. */
    readonly exchange: (credential: GrantCredential) => Effect.Effect<IssuedToken, VaultDenied>
    /** The grant behind a live token, if it holds `action` (for `host`, when given). */
    readonly authorize: (
      token: string,
      need: { readonly action?: string; readonly host?: string; readonly item?: string }
    ) => Effect.Effect<Grant, VaultDenied | VaultForbidden>
    /**
     * Signs `bytes` with the Ed25519 private key (base64 PKCS#8) in `item#field`: the key never leaves the vault,
     * only the signature and the key's id do. Deterministic: the same bytes give the same signature.
     */
    readonly sign: (
      item: string,
      field: string,
      bytes: Uint8Array
    ) => Effect.Effect<
      { readonly key_id: string; readonly signature: Uint8Array },
      VaultItemNotFound | VaultCorrupt | VaultKeyRefused
    >
    /** The public half of the signing key in `item#field`: its id and base64 SPKI DER (what verifiers hold). */
    readonly publicKey: (
      item: string,
      field: string
    ) => Effect.Effect<
      { readonly key_id: string; readonly public_key: string },
      VaultItemNotFound | VaultCorrupt | VaultKeyRefused
    >
    /** Reads `item#field` with a token whose grant names the item. */
    readonly readField: (
      token: string,
      reference: string
    ) => Effect.Effect<string, VaultDenied | VaultForbidden | VaultItemNotFound | VaultCorrupt>
  }
>() {}
