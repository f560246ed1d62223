import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"

/** AES-256-GCM with a fresh 96-bit nonce per encryption; `aad` binds the ciphertext to its item name. */
export const seal = (key: Uint8Array, plaintext: string, aad: string) => {
  const nonce = randomBytes(12)
  const cipher = createCipheriv("aes-256-gcm", key, nonce)
  cipher.setAAD(Buffer.from(aad, "utf8"))
  const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
  return { nonce, ciphertext, tag: cipher.getAuthTag() }
}

/** The plaintext, or undefined when authentication fails (tampering, wrong key, wrong item). */
export const open = (
  key: Uint8Array,
  sealed: { readonly nonce: Uint8Array; readonly ciphertext: Uint8Array; readonly tag: Uint8Array },
  aad: string
): string | undefined => {
  try {
    const decipher = createDecipheriv("aes-256-gcm", key, sealed.nonce)
    decipher.setAAD(Buffer.from(aad, "utf8"))
    decipher.setAuthTag(Buffer.from(sealed.tag))
    return Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]).toString("utf8")
  } catch {
    return undefined
  }
}

/** A master key from base64 text: exactly 32 bytes. */
export const parseMasterKey = (text: string): Uint8Array | undefined => {
  const bytes = Buffer.from(text.trim(), "base64")
  return bytes.byteLength === 32 ? new Uint8Array(bytes) : undefined
}

/**
 * The key file's master key, creating it (32 random bytes, base64, mode 0600) when absent. An existing
 * file readable by others is refused: the key would already be exposed.
 */
export const loadOrCreateKeyFile = (file: string): Uint8Array => {
  if (!fs.existsSync(file)) {
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.writeFileSync(file, `${randomBytes(32).toString("base64")}\n`, { mode: 0o600, flag: "wx" })
  }
  const read = readKeyFile(file)
  if (typeof read === "string") throw new Error(read)
  return read
}

/**
 * An existing key file's master key, or why it cannot be one (readable by others, not a base64 32-byte key,
 * unreadable): what the vault checks when it starts, so a bad file is a one-line configuration error.
 */
export const readKeyFile = (file: string): Uint8Array | string => {
  try {
    const mode = fs.statSync(file).mode & 0o777
    if ((mode & 0o077) !== 0) return `${file} is readable by others (mode ${mode.toString(8)}); chmod 600 it`
    return parseMasterKey(fs.readFileSync(file, "utf8")) ?? `${file} does not hold a base64 32-byte key`
  } catch (error) {
    return `${file} cannot be read: ${(error as NodeJS.ErrnoException).code ?? String(error)}`
  }
}
