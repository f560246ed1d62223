import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect } from "effect"
import { Unauthorized } from "../../contracts/market/Errors.js"
import { sha256Hex } from "../platform/Digest.js"
import { MarketConfig } from "./MarketConfig.js"
import { canonicalMessage, isAddress, recoverAddress } from "./WalletSignature.js"

export interface SignedRequest {
  readonly method: string
  readonly pathWithQuery: string
  readonly body: string
  readonly address: string
  readonly signature: string
  readonly timestamp: string
  readonly nonce: string
}

const NONCE_PATTERN = /^[A-Za-z0-9_-]{8,128}$/
const PRUNE_EVERY = 512

const refuse = (detail: string) => new Unauthorized({ code: "UNAUTHORIZED", detail })

/**
 * EIP-191 wallet-signed requests (docs/marketplace.md gives the message byte for byte): the
 * signature must recover the claimed address, the timestamp be within the window, and the nonce
 * be new for that address. Cheap checks come before the (slower) public-key recovery.
 */
export class WalletAuth extends Effect.Service<WalletAuth>()("market/WalletAuth", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const config = yield* MarketConfig
    const windowMillis = Duration.toMillis(config.signatureWindow)
    let verified = 0

    const verify = Effect.fn("WalletAuth.verify")(function* (request: SignedRequest) {
      if (!isAddress(request.address)) return yield* refuse("X-Wallet-Address is not a 0x address")
      if (!/^\d{1,12}$/.test(request.timestamp)) return yield* refuse("X-Wallet-Timestamp must be Unix epoch seconds")
      if (!NONCE_PATTERN.test(request.nonce))
        return yield* refuse("X-Wallet-Nonce must be 8..128 characters of A-Z, a-z, 0-9, _ or -")
      const now = yield* Clock.currentTimeMillis
      const signedAt = Number(request.timestamp) * 1000
      if (Math.abs(now - signedAt) > windowMillis)
        return yield* refuse(`X-Wallet-Timestamp is more than ${windowMillis / 1000} s from the server's clock`)
      const message = canonicalMessage({
        method: request.method,
        pathWithQuery: request.pathWithQuery,
        bodySha256: sha256Hex(request.body),
        timestamp: request.timestamp,
        nonce: request.nonce
      })
      const address = request.address.toLowerCase()
      if (recoverAddress(message, request.signature) !== address)
        return yield* refuse("the signature does not match X-Wallet-Address and the request")
      // Kept until the timestamp could no longer be accepted: after that the window refuses a replay.
      const fresh = yield* sql<{ nonce: string }>`INSERT INTO market_wallet_nonces (address, nonce, expires_at)
        VALUES (${address}, ${request.nonce}, ${signedAt + windowMillis}) ON CONFLICT DO NOTHING RETURNING nonce`.pipe(
        Effect.orDie
      )
      if (fresh.length === 0) return yield* refuse("X-Wallet-Nonce was already used")
      if (++verified % PRUNE_EVERY === 0)
        yield* sql`DELETE FROM market_wallet_nonces WHERE expires_at < ${now}`.pipe(Effect.orDie)
      return address
    })

    return { verify } as const
  })
}) {}
