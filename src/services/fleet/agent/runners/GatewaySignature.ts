import { createHash, createHmac, timingSafeEqual } from "node:crypto"

/**
 * How a pre-check job signs its requests to the gateway (docs/runners.md, "The gateway"): an HMAC-SHA256, keyed
 * with the request-signing secret, over the agent id, the method, the path (query included), the timestamp, a
 * nonce and the body's SHA-256 — one line each. The gateway accepts a timestamp within ±300 s of its clock and
 * each nonce once.
 */
export const SIGNATURE_HEADERS = {
  agent: "x-keel-agent",
  timestamp: "x-keel-timestamp",
  nonce: "x-keel-nonce",
  signature: "x-keel-signature"
} as const

/** How far a request's timestamp may be from the gateway's clock, either way. */
export const SKEW_SECONDS = 300

export interface SignedParts {
  readonly agent: string
  readonly method: string
  /** The request target as sent: path and query. */
  readonly path: string
  /** Unix seconds. */
  readonly timestamp: number
  readonly nonce: string
  readonly body: Uint8Array
}

export const signingText = (parts: SignedParts) =>
  [
    parts.agent,
    parts.method.toUpperCase(),
    parts.path,
    String(parts.timestamp),
    parts.nonce,
    createHash("sha256").update(parts.body).digest("hex")
  ].join("\n")

/** The signature a client sends (lowercase hex). */
export const signGatewayRequest = (secret: string, parts: SignedParts) =>
  createHmac("sha256", secret).update(signingText(parts)).digest("hex")

/** Nonces seen within the window: each is accepted once; old ones are forgotten as time passes. */
export const makeNonceBook = (capacity = 100_000) => {
  const seen = new Map<string, number>()
  return {
    /** True the first time `nonce` is used; false on a replay or when the book is full (refuse, do not forget). */
    use: (nonce: string, nowSeconds: number) => {
      for (const [key, expires] of seen) {
        if (expires > nowSeconds) break
        seen.delete(key)
      }
      if (seen.has(nonce) || seen.size >= capacity) return false
      seen.set(nonce, nowSeconds + 2 * SKEW_SECONDS)
      return true
    }
  }
}

export type NonceBook = ReturnType<typeof makeNonceBook>

export type SignatureVerdict =
  | { readonly ok: true }
  | {
      readonly ok: false
      readonly code: "GATEWAY_UNSIGNED" | "GATEWAY_SIGNATURE_INVALID" | "GATEWAY_STALE" | "GATEWAY_REPLAY"
      readonly detail: string
    }

/** Checks a request's signature headers; the nonce is spent only by a request whose signature holds. */
export const verifyRequest = (
  secret: string,
  expectedAgent: string,
  headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>,
  request: { readonly method: string; readonly path: string; readonly body: Uint8Array },
  nowSeconds: number,
  nonces: NonceBook
): SignatureVerdict => {
  const header = (name: string) => {
    const value = headers[name]
    return typeof value === "string" ? value : undefined
  }
  const agent = header(SIGNATURE_HEADERS.agent)
  const timestamp = header(SIGNATURE_HEADERS.timestamp)
  const nonce = header(SIGNATURE_HEADERS.nonce)
  const signature = header(SIGNATURE_HEADERS.signature)
  if (agent === undefined || timestamp === undefined || nonce === undefined || signature === undefined)
    return {
      ok: false,
      code: "GATEWAY_UNSIGNED",
      detail: `a request carries ${Object.values(SIGNATURE_HEADERS).join(", ")} (docs/runners.md)`
    }
  if (agent !== expectedAgent)
    return { ok: false, code: "GATEWAY_SIGNATURE_INVALID", detail: "not this gateway's agent" }
  if (!/^\d{1,12}$/.test(timestamp) || Math.abs(Number(timestamp) - nowSeconds) > SKEW_SECONDS)
    return {
      ok: false,
      code: "GATEWAY_STALE",
      detail: `the timestamp is more than ${SKEW_SECONDS} s from the gateway's clock`
    }
  if (!/^[A-Za-z0-9_-]{16,128}$/.test(nonce))
    return { ok: false, code: "GATEWAY_SIGNATURE_INVALID", detail: "the nonce is 16-128 of A-Z a-z 0-9 _ -" }
  const expected = Buffer.from(
    signGatewayRequest(secret, { agent, ...request, timestamp: Number(timestamp), nonce }),
    "hex"
  )
  const given = /^[0-9a-f]{64}$/.test(signature) ? Buffer.from(signature, "hex") : Buffer.alloc(0)
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return { ok: false, code: "GATEWAY_SIGNATURE_INVALID", detail: "the signature does not match the request" }
  if (!nonces.use(nonce, nowSeconds)) return { ok: false, code: "GATEWAY_REPLAY", detail: "the nonce was used already" }
  return { ok: true }
}

/** Whether `argv` on `target` starts with one of the commands the registry lets jobs submit. */
export const commandAllowed = (
  allowed: ReadonlyArray<{ readonly target: string; readonly argv: ReadonlyArray<string> }>,
  target: string,
  argv: ReadonlyArray<string>
) =>
  allowed.some(
    (entry) =>
      entry.target === target && argv.length >= entry.argv.length && entry.argv.every((word, i) => argv[i] === word)
  )
