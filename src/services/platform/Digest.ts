import { createHash } from "node:crypto"

/** Lowercase hex SHA-256 of bytes, or of a string's UTF-8 bytes. */
export const sha256Hex = (bytes: Uint8Array | string): string => createHash("sha256").update(bytes).digest("hex")
