import * as crypto from "node:crypto"

/**
 * Ed25519 for the release authority (docs/releases.md): a base64 PKCS#8 private key (what the vault item's
 * `private_key` field holds) signs exact bytes; a key is named by `sha256:<hex of its SPKI DER>`; verifiers hold
 * the public key as base64 SPKI DER. Deterministic signatures: signing the same bytes again gives the same 64 bytes.
 */

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/

/** Why a key could not be used: not base64, not PKCS#8, or not an Ed25519 key. */
export class KeyRefused extends Error {}

export const privateKeyFrom = (pkcs8Base64: string): crypto.KeyObject => {
  const text = pkcs8Base64.replace(/\s+/g, "")
  // Buffer.from(…, "base64") skips junk silently: validate the text first.
  if (text === "" || !BASE64.test(text)) throw new KeyRefused("the key is not base64 (PKCS#8 DER)")
  let key: crypto.KeyObject
  try {
    key = crypto.createPrivateKey({ key: Buffer.from(text, "base64"), format: "der", type: "pkcs8" })
  } catch {
    throw new KeyRefused("the key is not a PKCS#8 private key")
  }
  if (key.asymmetricKeyType !== "ed25519")
    throw new KeyRefused(`the key is ${key.asymmetricKeyType ?? "of an unknown type"}, not Ed25519`)
  return key
}

export const publicKeyFrom = (spkiBase64: string): crypto.KeyObject => {
  const text = spkiBase64.replace(/\s+/g, "")
  if (text === "" || !BASE64.test(text)) throw new KeyRefused("the public key is not base64 (SPKI DER)")
  let key: crypto.KeyObject
  try {
    key = crypto.createPublicKey({ key: Buffer.from(text, "base64"), format: "der", type: "spki" })
  } catch {
    throw new KeyRefused("the public key is not SPKI DER")
  }
  if (key.asymmetricKeyType !== "ed25519") throw new KeyRefused("the public key is not Ed25519")
  return key
}

/** `sha256:<hex>` of the public key's SPKI DER: the key id releases name and the registry trusts. */
export const keyIdOf = (key: crypto.KeyObject) => {
  const spki = (key.type === "private" ? crypto.createPublicKey(key) : key).export({ format: "der", type: "spki" })
  return `sha256:${crypto.createHash("sha256").update(spki).digest("hex")}`
}

/** The public half of a private key: its id and base64 SPKI DER. */
export const publicOf = (key: crypto.KeyObject) => ({
  key_id: keyIdOf(key),
  public_key: crypto.createPublicKey(key).export({ format: "der", type: "spki" }).toString("base64")
})

export const sign = (key: crypto.KeyObject, bytes: Uint8Array): Uint8Array => crypto.sign(null, bytes, key)

export const verify = (publicKey: crypto.KeyObject, bytes: Uint8Array, signature: Uint8Array): boolean => {
  try {
    return crypto.verify(null, bytes, publicKey, signature)
  } catch {
    return false
  }
}

/** A fresh key pair (tests and `ctl release key create`): the PKCS#8 private key and its public half, base64. */
export const generateKeyPair = () => {
  const { privateKey } = crypto.generateKeyPairSync("ed25519")
  return {
    private_key: privateKey.export({ format: "der", type: "pkcs8" }).toString("base64"),
    ...publicOf(privateKey)
  }
}
