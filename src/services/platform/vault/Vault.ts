import { Context, type Effect } from "effect"
import type {
  VaultCorrupt,
  VaultDenied,
  VaultForbidden,
  VaultInvalid,
  VaultItemNotFound,
  VaultKeyRefused
} from "../../../contracts/vault/Errors.js"
import type { Grant, GrantCredential } from "../../../contracts/vault/Schemas.js"

export interface IssuedToken {
  readonly token: string
  readonly expiresAt: number
  readonly grant: Grant
}

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
