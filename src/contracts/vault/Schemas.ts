import { Schema } from "effect"

/** The vault's wire model: grants, the credential a holder exchanges, and the token answer. */

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

/** A token exchanged for a grant credential (`POST /v1/vault/token`). */
export const TokenAnswer = Schema.Struct({
  token: Schema.String,
  expires_at: Schema.String,
  consumer: Schema.String,
  actions: Schema.Array(Schema.String),
  hosts: Schema.Array(Schema.String),
  items: Schema.Array(Schema.String)
})
