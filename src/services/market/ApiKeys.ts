import { randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import { agentNotFound, InvalidInput, UnknownApiKey } from "../../contracts/market/Errors.js"
import type { Principal } from "../../contracts/market/Principal.js"
import { sha256Hex } from "../platform/Digest.js"
import { SqlDirect } from "../platform/SqlDirect.js"
import { keyChangeWatch } from "./ApiKeyChanges.js"
import { checksumAddress, isAddress } from "./WalletSignature.js"

export type { Principal }

export const principalId = (principal: Principal) =>
  principal.kind === "wallet" ? `wallet:${principal.address}` : `agent:${principal.ticker}`

export interface ApiKeyInfo {
  readonly id: string
  /** The key's first characters, enough to recognise it in a listing. */
  readonly prefix: string
  /** EIP-55 form (stored lowercase). */
  readonly wallet: string | null
  readonly agent: string | null
  readonly createdAt: number
  readonly revokedAt: number | null
}

const KEY_PREFIX = "keel_"
const SHOWN = 12
/** Live keys remembered by hash (about 200 bytes each); past that the cache starts over. */
const LIVE_KEYS_CACHED = 10_000

const hashKey = (key: string) => sha256Hex(key)

interface KeyRow {
  readonly id: string
  readonly prefix: string
  readonly wallet: string | null
  readonly agent: string | null
  readonly created_at: number
  readonly revoked_at: number | null
}

const toInfo = (row: KeyRow): ApiKeyInfo => ({
  id: row.id,
  prefix: row.prefix,
  wallet: row.wallet === null ? null : checksumAddress(row.wallet),
  agent: row.agent,
  createdAt: Number(row.created_at),
  revokedAt: row.revoked_at === null ? null : Number(row.revoked_at)
})

/**
 * API keys: 256 random bits shown once at creation; only their SHA-256 is stored (a key is
 * high-entropy, so a slow password hash buys nothing). A revoked key fails its next request.
 */
export class ApiKeys extends Effect.Service<ApiKeys>()("market/ApiKeys", {
  scoped: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const create = Effect.fn("ApiKeys.create")(function* (owner: { wallet?: string; agent?: string }) {
      if ((owner.wallet === undefined) === (owner.agent === undefined))
        return yield* new InvalidInput({
          code: "INVALID_INPUT",
          detail: "a key belongs to exactly one wallet or one agent"
        })
      if (owner.wallet !== undefined && !isAddress(owner.wallet))
        return yield* new InvalidInput({ code: "INVALID_INPUT", detail: `not a wallet address: ${owner.wallet}` })
      if (owner.agent !== undefined) {
        const rows = yield* sql`SELECT 1 FROM market_agents WHERE ticker = ${owner.agent}`.pipe(Effect.orDie)
        if (rows.length === 0) return yield* agentNotFound(owner.agent)
      }
      const key = KEY_PREFIX + randomBytes(32).toString("base64url")
      const now = yield* Clock.currentTimeMillis
      const row: KeyRow = {
        id: `key_${randomBytes(6).toString("hex")}`,
        prefix: key.slice(0, SHOWN),
        wallet: owner.wallet?.toLowerCase() ?? null,
        agent: owner.agent ?? null,
        created_at: now,
        revoked_at: null
      }
      yield* sql`INSERT INTO market_api_keys ${sql.insert({ ...row, hash: hashKey(key) })}`.pipe(Effect.orDie)
      return { key, info: toInfo(row) }
    })

    const list = sql<KeyRow>`SELECT id, prefix, wallet, agent, created_at, revoked_at FROM market_api_keys
      ORDER BY created_at, id`.pipe(
      Effect.map((rows) => rows.map(toInfo)),
      Effect.orDie
    )

    /** Revokes by id or by the shown prefix; revoking twice keeps the first time. */
    const revoke = Effect.fn("ApiKeys.revoke")(function* (idOrPrefix: string) {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* sql<KeyRow>`UPDATE market_api_keys SET revoked_at = COALESCE(revoked_at, ${now})
        WHERE id = ${idOrPrefix} OR prefix = ${idOrPrefix} OR hash = ${hashKey(idOrPrefix)}
        RETURNING id, prefix, wallet, agent, created_at, revoked_at`.pipe(Effect.orDie)
      forget()
      if (rows.length === 0)
        // Never the whole text back: an operator revoking a leaked key passes the key itself.
        return yield* new UnknownApiKey({
          code: "API_KEY_NOT_FOUND",
          detail: `no API key ${idOrPrefix.length > 16 ? `${idOrPrefix.slice(0, 12)}…` : idOrPrefix}`
        })
      return rows.map(toInfo)
    })

    const lookup = (hash: string) =>
      sql<{ wallet: string | null; agent: string | null }>`SELECT wallet, agent FROM market_api_keys
        WHERE hash = ${hash} AND revoked_at IS NULL`.pipe(
        Effect.map((rows): Principal | undefined => {
          const row = rows[0]
          if (row === undefined) return undefined
          return row.agent !== null
            ? { kind: "agent", ticker: row.agent }
            : { kind: "wallet", address: row.wallet ?? "" }
        }),
        Effect.orDie
      )

    /*
     * Live keys this process has seen, by hash: a request's key is looked up once, not on every request
     * (≈ 130 µs a request through the sql template). Only live keys are kept, so a key created anywhere works
     * at once. A revoke through this service empties the cache (and `generation` stops a lookup that raced
     * it from putting the key back). A revoke by another process (`ctl market keys revoke` on the server's data
     * dir, another server on the same PostgreSQL) is found by `forgetChangedKeys` (ApiKeyChanges.ts) before every
     * authentication: the change counter on SQLite, notifications on PostgreSQL.
     */
    const live = new Map<string, Principal>()
    let generation = 0
    const forget = () => {
      live.clear()
      generation++
    }
    const forgetChangedKeys = yield* keyChangeWatch(forget)

    /** The principal a live key acts for, or undefined for an unknown or revoked key. */
    const authenticate = (key: string) =>
      Effect.gen(function* () {
        yield* forgetChangedKeys
        const hash = hashKey(key)
        const cached = live.get(hash)
        if (cached !== undefined) return cached
        const before = generation
        const principal = yield* lookup(hash)
        if (principal !== undefined && generation === before) {
          if (live.size >= LIVE_KEYS_CACHED) live.clear()
          live.set(hash, principal)
        }
        return principal
      })

    return { create, list, revoke, authenticate } as const
  }),
  dependencies: [SqlDirect.Default]
}) {}
