import type { Refusal } from "../../lib/api.js"
import { Refused } from "../../lib/Refused.js"

/** The readout's 401 codes (docs/analytics.md, "Authentication"): every one reads "this token cannot read this". */
const UNAUTHORIZED = new Set(["ADMIN_TOKEN_REQUIRED", "ADMIN_TOKEN_INVALID", "ADMIN_TOKENS_NOT_CONFIGURED"])

export const ReadoutRefused = ({ refusal }: { refusal: Refusal }) =>
  UNAUTHORIZED.has(refusal.code) || refusal.status === 401 ? (
    <Refused
      refusal={{
        status: 401,
        code: refusal.code,
        detail: refusal.detail.startsWith("this token cannot read this")
          ? refusal.detail
          : `this token cannot read this (${refusal.detail})`
      }}
    />
  ) : (
    <Refused refusal={refusal} />
  )
