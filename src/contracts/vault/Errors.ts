import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

/** The vault's typed errors: the consumer API answers them, the control plane's authorization too. */

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
