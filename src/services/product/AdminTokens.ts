import { createHash, timingSafeEqual } from "node:crypto"
import { Config, Effect, Redacted } from "effect"
import { AdminUnauthorized } from "../../contracts/product/Readout.js"
import { bearerToken } from "../platform/Credentials.js"

const digest = (token: string) => createHash("sha256").update(token, "utf8").digest()

/**
 * The admin tokens of the readout (`KEEL_ADMIN_TOKENS`, comma-separated, read as a secret). Only their
 * SHA-256 digests are kept; a presented token is compared with every one in constant time (equal-length
 * digests, no early exit), so neither its content nor which token matched shows in the timing.
 */
export class AdminTokens extends Effect.Service<AdminTokens>()("product/AdminTokens", {
  effect: Effect.gen(function* () {
    const setting = yield* Config.option(Config.redacted("KEEL_ADMIN_TOKENS"))
    const digests =
      setting._tag === "Some"
        ? Redacted.value(setting.value)
            .split(",")
            .map((t) => t.trim())
            .filter((t) => t.length > 0)
            .map(digest)
        : []

    /** Checks an `Authorization` header value. */
    const authorize = Effect.fn("AdminTokens.authorize")(function* (authorization: string | undefined) {
      if (digests.length === 0) {
        return yield* new AdminUnauthorized({
          code: "ADMIN_TOKENS_NOT_CONFIGURED",
          detail: "the readout is disabled: no admin token is configured (set KEEL_ADMIN_TOKENS on the server)"
        })
      }
      const token = bearerToken(authorization)
      if (token === undefined) {
        return yield* new AdminUnauthorized({
          code: "ADMIN_TOKEN_REQUIRED",
          detail: "an admin token is required: send Authorization: Bearer <one of KEEL_ADMIN_TOKENS>"
        })
      }
      const presented = digest(token)
      let match = false
      for (const known of digests) match = timingSafeEqual(presented, known) || match
      if (!match)
        return yield* new AdminUnauthorized({ code: "ADMIN_TOKEN_INVALID", detail: "admin token not accepted" })
    })

    return { authorize, configured: digests.length > 0 } as const
  })
}) {}
