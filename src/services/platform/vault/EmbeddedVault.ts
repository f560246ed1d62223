import { randomBytes, timingSafeEqual } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { Clock, Config, ConfigError, Duration, Effect, Layer, Option, Redacted } from "effect"
import {
  VaultCorrupt,
  VaultDenied,
  VaultForbidden,
  VaultInvalid,
  VaultItemNotFound,
  VaultKeyRefused
} from "../../../contracts/vault/Errors.js"
import type { Grant, GrantCredential } from "../../../contracts/vault/Schemas.js"
import { AppConfig, vaultKeyFileSetting } from "../AppConfig.js"
import { sha256Hex } from "../Digest.js"
import { durationSetting } from "../DurationSetting.js"
import { KeyRefused, keyIdOf, privateKeyFrom, publicOf, sign as signBytes } from "./Ed25519.js"
import { Vault } from "./Vault.js"
import { loadOrCreateKeyFile, open, parseMasterKey, readKeyFile, seal } from "./VaultCipher.js"

interface GrantRow {
  readonly id: string
  readonly consumer: string
  readonly actions: string
  readonly items: string
  readonly hosts: string
  readonly secret_hash: string
  readonly created_at: number
  readonly expires_at: number
  readonly revoked_at: number | null
}

const toGrant = (row: GrantRow): Grant => ({
  id: row.id,
  consumer: row.consumer,
  actions: JSON.parse(row.actions),
  items: JSON.parse(row.items),
  hosts: JSON.parse(row.hosts),
  created_at: Number(row.created_at),
  expires_at: Number(row.expires_at),
  revoked_at: row.revoked_at === null ? null : Number(row.revoked_at)
})

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/
const GRANT_ID = /^grant_[0-9a-f]{16}$/
const sameSecret = (a: string, b: string) => {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.byteLength === y.byteLength && timingSafeEqual(x, y)
}

/**
 * The embedded vault: items encrypted at rest with AES-256-GCM under the master key (KEEL_VAULT_KEY,
 * or a 0600 key file created on first start), grants whose credentials are stored hashed, short-lived
 * tokens scoped to exactly their grant, and an audit log of every issue and refusal (never a secret).
 */
export const embeddedVault = (options: { readonly masterKey?: Uint8Array } = {}) =>
  Layer.effect(
    Vault,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const app = yield* AppConfig
      const configuredKey = yield* Config.option(Config.redacted("KEEL_VAULT_KEY"))
      const keyFile = yield* vaultKeyFileSetting(app.dataDir)
      const tokenTtl = yield* durationSetting("KEEL_VAULT_TOKEN_TTL").pipe(Config.withDefault(Duration.minutes(15)))
      // The key is checked now — a bad one is a one-line configuration error, never a stack trace at first use —
      // and a missing key file is created on first use, so commands that never touch a secret create none.
      let masterKey: Uint8Array | undefined = options.masterKey
      if (masterKey === undefined && Option.isSome(configuredKey)) {
        masterKey = parseMasterKey(Redacted.value(configuredKey.value))
        if (masterKey === undefined)
          return yield* Effect.fail(ConfigError.InvalidData(["KEEL_VAULT_KEY"], "must be a base64 32-byte key"))
      }
      if (masterKey === undefined && fs.existsSync(path.resolve(keyFile))) {
        const read = readKeyFile(path.resolve(keyFile))
        if (typeof read === "string") return yield* Effect.fail(ConfigError.InvalidData(["KEEL_VAULT_KEY_FILE"], read))
        masterKey = read
      }
      const key = Effect.sync(() => {
        masterKey ??= loadOrCreateKeyFile(path.resolve(keyFile))
        return masterKey
      })

      const audit = (event: string, detail: { consumer?: string; grant?: string; reason?: string }) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          yield* sql`INSERT INTO vault_audit (at, event, consumer, grant_id, detail)
          VALUES (${now}, ${event}, ${detail.consumer ?? null}, ${detail.grant ?? null}, ${detail.reason ?? null})`
        }).pipe(Effect.orDie)

      const grantById = (id: string) =>
        sql<GrantRow>`SELECT * FROM vault_grants WHERE id = ${id}`.pipe(
          Effect.map((rows) => rows[0]),
          Effect.orDie
        )

      const denied = (reason: string, grant?: string, consumer?: string) =>
        Effect.zipRight(
          audit("token_refused", { reason, ...(grant ? { grant } : {}), ...(consumer ? { consumer } : {}) }),
          Effect.fail(new VaultDenied({ code: "VAULT_DENIED", detail: reason }))
        )

      const liveGrant = (row: GrantRow | undefined, now: number) =>
        row === undefined
          ? "unknown grant"
          : row.revoked_at !== null
            ? "the grant was revoked"
            : Number(row.expires_at) <= now
              ? "the grant has expired"
              : undefined

      const readItem = (name: string) =>
        Effect.gen(function* () {
          const rows = yield* sql<{ nonce: Uint8Array; ciphertext: Uint8Array; tag: Uint8Array }>`
          SELECT nonce, ciphertext, tag FROM vault_items WHERE name = ${name}`.pipe(Effect.orDie)
          const row = rows[0]
          if (row === undefined)
            return yield* new VaultItemNotFound({ code: "VAULT_ITEM_NOT_FOUND", item: name, detail: `no item ${name}` })
          const plaintext = open(yield* key, row, name)
          if (plaintext === undefined)
            return yield* new VaultCorrupt({
              code: "VAULT_CORRUPT",
              item: name,
              detail: `item ${name} failed authentication: it was altered or sealed under another key`
            })
          return JSON.parse(plaintext) as Record<string, string>
        })

      const authorize = (token: string, need: { action?: string; host?: string; item?: string }) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const rows = yield* sql<{ grant_id: string; expires_at: number }>`
          SELECT grant_id, expires_at FROM vault_tokens WHERE hash = ${sha256Hex(token)}`.pipe(Effect.orDie)
          const issued = rows[0]
          if (issued === undefined) return yield* denied("unknown token")
          if (Number(issued.expires_at) <= now) return yield* denied("the token has expired", issued.grant_id)
          const row = yield* grantById(issued.grant_id)
          const dead = liveGrant(row, now)
          if (dead !== undefined || row === undefined) return yield* denied(dead ?? "unknown grant", issued.grant_id)
          const grant = toGrant(row)
          const missing =
            need.action !== undefined && !grant.actions.includes(need.action)
              ? `the grant does not hold ${need.action}`
              : need.host !== undefined && !grant.hosts.includes(need.host)
                ? `the grant does not cover host ${need.host}`
                : need.item !== undefined && !itemCovered(grant.items, need.item)
                  ? `the grant does not name item ${need.item}`
                  : undefined
          if (missing !== undefined) {
            yield* audit("access_refused", { consumer: grant.consumer, grant: grant.id, reason: missing })
            return yield* new VaultForbidden({ code: "VAULT_FORBIDDEN", detail: missing })
          }
          return grant
        })

      /** The Ed25519 key in `item#field`, parsed inside the vault (the key object never leaves this closure). */
      const signingKey = (item: string, field: string) =>
        Effect.gen(function* () {
          const fields = yield* readItem(item)
          const value = fields[field]
          if (value === undefined)
            return yield* new VaultItemNotFound({
              code: "VAULT_ITEM_NOT_FOUND",
              item,
              detail: `item ${item} has no field ${field}`
            })
          return yield* Effect.try({
            try: () => privateKeyFrom(value),
            catch: (error) =>
              new VaultKeyRefused({
                code: "VAULT_KEY_REFUSED",
                item,
                detail: `${item}#${field}: ${error instanceof KeyRefused ? error.message : "unusable key"}`
              })
          })
        })

      return Vault.of({
        putItem: (name, fields) =>
          Effect.gen(function* () {
            if (!NAME.test(name))
              return yield* new VaultInvalid({ code: "VAULT_INVALID", detail: `bad item name ${name}` })
            const names = Object.keys(fields)
            if (names.length === 0 || !names.every((f) => NAME.test(f)))
              return yield* new VaultInvalid({ code: "VAULT_INVALID", detail: "an item needs named fields" })
            const sealed = seal(yield* key, JSON.stringify(fields), name)
            const now = yield* Clock.currentTimeMillis
            yield* sql`INSERT INTO vault_items (name, nonce, ciphertext, tag, fields, updated_at)
            VALUES (${name}, ${sealed.nonce}, ${sealed.ciphertext}, ${sealed.tag}, ${JSON.stringify(names.sort())}, ${now})
            ON CONFLICT (name) DO UPDATE SET nonce = excluded.nonce, ciphertext = excluded.ciphertext,
              tag = excluded.tag, fields = excluded.fields, updated_at = excluded.updated_at`.pipe(Effect.orDie)
          }),
        getItem: readItem,
        listItems: sql<{ name: string; fields: string }>`SELECT name, fields FROM vault_items ORDER BY name`.pipe(
          Effect.map((rows) => rows.map((r) => ({ name: r.name, fields: JSON.parse(r.fields) as Array<string> }))),
          Effect.orDie
        ),
        removeItem: (name) =>
          sql<{ name: string }>`DELETE FROM vault_items WHERE name = ${name} RETURNING name`.pipe(
            Effect.map((rows) => rows.length > 0),
            Effect.orDie
          ),
        createGrant: (request) =>
          Effect.gen(function* () {
            if (!NAME.test(request.consumer))
              return yield* new VaultInvalid({ code: "VAULT_INVALID", detail: `bad consumer name ${request.consumer}` })
            if (request.actions.length === 0 && request.items.length === 0)
              return yield* new VaultInvalid({ code: "VAULT_INVALID", detail: "a grant needs actions or items" })
            if (request.ttlMillis <= 0)
              return yield* new VaultInvalid({ code: "VAULT_INVALID", detail: "a grant must expire" })
            const now = yield* Clock.currentTimeMillis
            const secret = randomBytes(32).toString("base64url")
            const row: GrantRow = {
              id: `grant_${randomBytes(8).toString("hex")}`,
              consumer: request.consumer,
              actions: JSON.stringify([...new Set(request.actions)].sort()),
              items: JSON.stringify([...new Set(request.items)].sort()),
              hosts: JSON.stringify([...new Set(request.hosts)].sort()),
              secret_hash: sha256Hex(secret),
              created_at: now,
              expires_at: now + request.ttlMillis,
              revoked_at: null
            }
            yield* sql`INSERT INTO vault_grants ${sql.insert({ ...row })}`.pipe(Effect.orDie)
            yield* audit("grant_created", { consumer: row.consumer, grant: row.id })
            const grant = toGrant(row)
            return {
              grant,
              credential: {
                grant_id: row.id,
                consumer: row.consumer,
                secret,
                scope: { actions: grant.actions, hosts: grant.hosts, items: grant.items }
              }
            }
          }),
        listGrants: sql<GrantRow>`SELECT * FROM vault_grants ORDER BY created_at, id`.pipe(
          Effect.map((rows) => rows.map(toGrant)),
          Effect.orDie
        ),
        revokeGrant: (id) =>
          Effect.gen(function* () {
            const now = yield* Clock.currentTimeMillis
            const rows = yield* sql<{ id: string }>`UPDATE vault_grants SET revoked_at = COALESCE(revoked_at, ${now})
            WHERE id = ${id} RETURNING id`.pipe(Effect.orDie)
            if (rows.length > 0) yield* audit("grant_revoked", { grant: id })
            return rows.length > 0
          }),
        exchange: (credential: GrantCredential) =>
          Effect.gen(function* () {
            const now = yield* Clock.currentTimeMillis
            const row = yield* grantById(credential.grant_id)
            // The audit records what the vault knows, never the caller's text as such: a secret pasted
            // into the wrong field must not land in the log. An unknown grant id is kept only when it
            // has the shape of one.
            if (row === undefined)
              return yield* denied(
                "unknown grant or wrong secret",
                GRANT_ID.test(credential.grant_id) ? credential.grant_id : undefined
              )
            if (!sameSecret(sha256Hex(credential.secret), row.secret_hash))
              return yield* denied("unknown grant or wrong secret", row.id, row.consumer)
            if (row.consumer !== credential.consumer)
              return yield* denied("the credential names another consumer", row.id, row.consumer)
            const dead = liveGrant(row, now)
            if (dead !== undefined) return yield* denied(dead, row.id, row.consumer)
            const token = `kvt_${randomBytes(32).toString("base64url")}`
            const expiresAt = Math.min(now + Duration.toMillis(tokenTtl), Number(row.expires_at))
            yield* sql`INSERT INTO vault_tokens (hash, grant_id, expires_at) VALUES (${sha256Hex(token)}, ${row.id}, ${expiresAt})`.pipe(
              Effect.orDie
            )
            yield* sql`DELETE FROM vault_tokens WHERE expires_at < ${now}`.pipe(Effect.orDie)
            yield* audit("token_issued", { consumer: row.consumer, grant: row.id })
            return { token, expiresAt, grant: toGrant(row) }
          }),
        authorize,
        sign: (item, field, bytes) =>
          Effect.gen(function* () {
            const key = yield* signingKey(item, field)
            const signed = { key_id: keyIdOf(key), signature: signBytes(key, bytes) }
            yield* audit("signed", { reason: `${item}#${field} ${signed.key_id}` })
            return signed
          }),
        publicKey: (item, field) => Effect.map(signingKey(item, field), publicOf),
        readField: (token, reference) =>
          Effect.gen(function* () {
            const [item = "", field = ""] = reference.split("#")
            const grant = yield* authorize(token, { item: `${item}#${field}` })
            const fields = yield* readItem(item)
            const value = fields[field]
            if (value === undefined)
              return yield* new VaultItemNotFound({
                code: "VAULT_ITEM_NOT_FOUND",
                item,
                detail: `item ${item} has no field ${field}`
              })
            yield* audit("field_read", { consumer: grant.consumer, grant: grant.id, reason: `${item}#${field}` })
            return value
          })
      })
    })
  )

/**
 * Whether a grant's `items` cover `wanted` (an item, or an `item#field`): a whole item covers each of its fields,
 * an `item#field` scope only that field.
 */
export const itemCovered = (items: ReadonlyArray<string>, wanted: string) =>
  items.includes(wanted) || (wanted.includes("#") && items.includes(wanted.slice(0, wanted.indexOf("#"))))

/** The vault as configured: KEEL_VAULT_KEY, or the key file. */
export const EmbeddedVaultLayer = embeddedVault()
