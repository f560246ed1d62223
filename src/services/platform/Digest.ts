import { createHash } from "node:crypto"
import { closeSync, createReadStream, openSync, readSync } from "node:fs"

/** Lowercase hex SHA-256 of bytes, or of a string's UTF-8 bytes. */
export const sha256Hex = (bytes: Uint8Array | string): string => createHash("sha256").update(bytes).digest("hex")

/** Lowercase hex SHA-256 of a file's bytes, read in 1 MiB chunks (a multi-GiB recording never sits in memory). */
export const sha256File = (file: string): string => {
  const hash = createHash("sha256")
  const buffer = Buffer.allocUnsafe(1024 * 1024)
  const fd = openSync(file, "r")
  try {
    for (;;) {
      const read = readSync(fd, buffer, 0, buffer.length, null)
      if (read === 0) break
      hash.update(buffer.subarray(0, read))
    }
  } finally {
    closeSync(fd)
  }
  return hash.digest("hex")
}

/** SHA-256 and size of a file, streamed (never held in memory, never blocking the event loop). */
export const fileDigest = async (file: string): Promise<{ readonly sha256: string; readonly size: number }> => {
  const hash = createHash("sha256")
  let size = 0
  for await (const chunk of createReadStream(file)) {
    hash.update(chunk as Buffer)
    size += (chunk as Buffer).byteLength
  }
  return { sha256: hash.digest("hex"), size }
}
