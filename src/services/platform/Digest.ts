import { createHash } from "node:crypto"
import { readFileSync } from "node:fs"

/** Lowercase hex SHA-256 of bytes, or of a string's UTF-8 bytes. */
export const sha256Hex = (bytes: Uint8Array | string): string => createHash("sha256").update(bytes).digest("hex")

/** Lowercase hex SHA-256 of a file's bytes. */
export const sha256File = (file: string): string => createHash("sha256").update(readFileSync(file)).digest("hex")
