/**
 * Wallet-signed HTTP requests: the client `personal_sign`s (EIP-191) a canonical description of the request,
 * so any Ethereum wallet can authenticate without a custom signing scheme, and the server recovers the signer.
 */
import { secp256k1 } from "@noble/curves/secp256k1.js"
import { keccak_256 } from "@noble/hashes/sha3.js"
import { bytesToHex, concatBytes, hexToBytes, randomBytes, utf8ToBytes } from "@noble/hashes/utils.js"
import { sha256Hex } from "../platform/Digest.js"

export const WALLET_AUTH_VERSION = "keel-wallet-auth-v1"

export interface CanonicalRequest {
  readonly method: string
  readonly pathWithQuery: string
  readonly bodySha256: string
  readonly timestamp: string
  readonly nonce: string
}

export interface RequestToSign {
  readonly method: string
  readonly pathWithQuery: string
  readonly body?: string | Uint8Array
  readonly timestamp?: number
  readonly nonce?: string
}

const strip0x = (hex: string): string => (hex.startsWith("0x") || hex.startsWith("0X") ? hex.slice(2) : hex)

/** Header values go in verbatim: the server rebuilds this from what it received, so any normalisation would break it. */
export const canonicalMessage = (req: CanonicalRequest): string =>
  [WALLET_AUTH_VERSION, req.method.toUpperCase(), req.pathWithQuery, req.bodySha256, req.timestamp, req.nonce].join(
    "\n"
  )

export const personalMessageHash = (message: string): Uint8Array => {
  const bytes = utf8ToBytes(message)
  // The prefix counts bytes, not UTF-16 code units.
  return keccak_256(concatBytes(utf8ToBytes(`\x19Ethereum Signed Message:\n${bytes.length}`), bytes))
}

const addressOfPublicKey = (uncompressed: Uint8Array): string =>
  `0x${bytesToHex(keccak_256(uncompressed.subarray(1)).subarray(-20))}`

export const isAddress = (text: string): boolean => /^0x[0-9a-fA-F]{40}$/.test(text)

/** Checksummed forms already computed: every trade's stream event names its wallet in EIP-55 form. */
const checksummed = new Map<string, string>()
const CHECKSUMS_KEPT = 10_000

/** The EIP-55 form of an address (a keccak-256 of it, ≈ 10 µs here: the forms met are remembered). */
export const checksumAddress = (address: string): string => {
  const lower = strip0x(address).toLowerCase()
  const known = checksummed.get(lower)
  if (known !== undefined) return known
  const hash = bytesToHex(keccak_256(utf8ToBytes(lower)))
  let out = "0x"
  for (let i = 0; i < lower.length; i++) {
    const c = lower[i]!
    out += Number.parseInt(hash[i]!, 16) >= 8 ? c.toUpperCase() : c
  }
  if (checksummed.size >= CHECKSUMS_KEPT) checksummed.clear()
  checksummed.set(lower, out)
  return out
}

export const addressOfPrivateKey = (privateKeyHex: string): string =>
  checksumAddress(addressOfPublicKey(secp256k1.getPublicKey(hexToBytes(strip0x(privateKeyHex)), false)))

/** Lowercase address of the signer, or undefined: a request header is attacker-controlled, so nothing here throws. */
export const recoverAddress = (message: string, signatureHex: string): string | undefined => {
  if (!/^0x[0-9a-fA-F]{130}$/.test(signatureHex)) return undefined
  const bytes = hexToBytes(signatureHex.slice(2))
  const v = bytes[64]!
  // Wallets emit 27/28; some libraries and hardware wallets emit the bare recovery bit.
  const recovery = v >= 27 ? v - 27 : v
  if (recovery !== 0 && recovery !== 1) return undefined
  try {
    const signature = secp256k1.Signature.fromBytes(bytes.subarray(0, 64), "compact").addRecoveryBit(recovery)
    // EIP-2: only the low-s form. Its mirror (n − s, v flipped) is the same signature written another way.
    if (signature.hasHighS()) return undefined
    return addressOfPublicKey(signature.recoverPublicKey(personalMessageHash(message)).toBytes(false))
  } catch {
    return undefined
  }
}

export const signPersonal = (privateKeyHex: string, message: string): string => {
  // noble's "recovered" format puts the recovery byte first; Ethereum puts it last, offset by 27.
  const sig = secp256k1.sign(personalMessageHash(message), hexToBytes(strip0x(privateKeyHex)), {
    prehash: false,
    format: "recovered"
  })
  return `0x${bytesToHex(sig.subarray(1))}${(sig[0]! + 27).toString(16)}`
}

export const signRequest = (privateKeyHex: string, req: RequestToSign): Record<string, string> => {
  const timestamp = String(req.timestamp ?? Math.floor(Date.now() / 1000))
  const nonce = req.nonce ?? bytesToHex(randomBytes(16))
  const message = canonicalMessage({
    method: req.method,
    pathWithQuery: req.pathWithQuery,
    bodySha256: sha256Hex(req.body ?? ""),
    timestamp,
    nonce
  })
  return {
    "x-wallet-address": addressOfPrivateKey(privateKeyHex),
    "x-wallet-signature": signPersonal(privateKeyHex, message),
    "x-wallet-timestamp": timestamp,
    "x-wallet-nonce": nonce
  }
}
