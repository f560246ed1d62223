import { createHash } from "node:crypto"
import * as fs from "node:fs"
import { Readable, Writable } from "node:stream"
import { pipeline } from "node:stream/promises"
import { createGunzip } from "node:zlib"

/** The archive is not a gzip'd tar, or the wanted entry is not a regular file. */
export class ArchiveRefused extends Error {}

export interface ExtractedEntry {
  readonly sha256: string
  readonly size: number
  readonly mode: number
}

const BLOCK = 512

const text = (block: Buffer, from: number, length: number) => {
  const field = block.subarray(from, from + length)
  const end = field.indexOf(0)
  return field.subarray(0, end === -1 ? field.length : end).toString("utf8")
}

const octal = (block: Buffer, from: number, length: number) => {
  const value = text(block, from, length).trim()
  if (value === "") return 0
  if (!/^[0-7]+$/.test(value)) throw new ArchiveRefused(`a tar header holds a bad number: ${value}`)
  return Number.parseInt(value, 8)
}

/** pax records: `<length> <key>=<value>\n`; the `path` one names the next entry. */
const paxPath = (data: Buffer) => {
  let at = 0
  let found: string | undefined
  while (at < data.length) {
    const space = data.indexOf(0x20, at)
    if (space === -1) break
    const length = Number(data.subarray(at, space).toString("ascii"))
    if (!Number.isSafeInteger(length) || length <= 0) break
    const record = data.subarray(space + 1, at + length - 1).toString("utf8")
    const eq = record.indexOf("=")
    if (record.slice(0, eq) === "path") found = record.slice(eq + 1)
    at += length
  }
  return found
}

const normalize = (name: string) => name.replace(/^(\.\/)+/, "")

/**
 * Copies the entry `wanted` (its path inside the archive) of a `.tar.gz` stream into `out` (created exclusively,
 * mode 0600), hashing it on the way — a streaming tar reader (ustar, pax `path`, GNU long names) so the archive is
 * never held in memory. Null when the archive has no such entry; a link or directory of that name is refused.
 */
export const extractEntry = async (
  archive: AsyncIterable<Uint8Array>,
  wanted: string,
  out: string
): Promise<ExtractedEntry | null> => {
  const target = normalize(wanted)
  let pending: Buffer = Buffer.alloc(0)
  let state: "header" | "data" | "end" = "header"
  let remaining = 0
  let padding = 0
  let kind: "copy" | "pax" | "longname" | "skip" = "skip"
  let meta: Array<Buffer> = []
  let nextName: string | undefined
  let found: ExtractedEntry | null = null
  let fd: number | undefined
  let hash = createHash("sha256")
  let copied = 0
  let mode = 0

  const header = (block: Buffer) => {
    if (block.every((b) => b === 0)) {
      state = "end"
      return
    }
    const prefix = block.subarray(257, 262).toString("ascii") === "ustar" ? text(block, 345, 155) : ""
    const name = nextName ?? (prefix === "" ? text(block, 0, 100) : `${prefix}/${text(block, 0, 100)}`)
    nextName = undefined
    const type = String.fromCharCode(block[156] ?? 0)
    const size = octal(block, 124, 12)
    remaining = size
    padding = (BLOCK - (size % BLOCK)) % BLOCK
    if (type === "x") kind = "pax"
    else if (type === "L") kind = "longname"
    else if (normalize(name) === target && found === null && fd === undefined) {
      if (type !== "0" && type !== "\0") throw new ArchiveRefused(`${wanted} is not a regular file in the archive`)
      mode = octal(block, 100, 8)
      fd = fs.openSync(out, "wx", 0o600)
      hash = createHash("sha256")
      copied = 0
      kind = "copy"
    } else kind = "skip"
    meta = []
    state = "data"
    if (remaining === 0) finishEntry()
  }

  const finishEntry = () => {
    if (kind === "copy" && fd !== undefined) {
      fs.closeSync(fd)
      fd = undefined
      found = { sha256: hash.digest("hex"), size: copied, mode }
    } else if (kind === "pax") nextName = paxPath(Buffer.concat(meta))
    else if (kind === "longname") nextName = text(Buffer.concat(meta), 0, Buffer.concat(meta).length)
    state = "header"
  }

  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      try {
        pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
        for (;;) {
          if (state === "end") {
            pending = Buffer.alloc(0)
            break
          }
          if (state === "header") {
            if (pending.length < BLOCK) break
            const block = pending.subarray(0, BLOCK)
            pending = pending.subarray(BLOCK)
            header(block)
            continue
          }
          // data, then its padding
          if (remaining > 0) {
            if (pending.length === 0) break
            const piece = pending.subarray(0, Math.min(remaining, pending.length))
            pending = pending.subarray(piece.length)
            remaining -= piece.length
            if (kind === "copy" && fd !== undefined) {
              fs.writeSync(fd, piece)
              hash.update(piece)
              copied += piece.length
            } else if (kind === "pax" || kind === "longname") meta.push(Buffer.from(piece))
            if (remaining > 0) break
          }
          if (padding > 0) {
            const skip = Math.min(padding, pending.length)
            pending = pending.subarray(skip)
            padding -= skip
            if (padding > 0) break
          }
          finishEntry()
        }
        done()
      } catch (error) {
        done(error as Error)
      }
    }
  })

  try {
    await pipeline(Readable.from(archive), createGunzip(), sink)
  } catch (error) {
    if (fd !== undefined) fs.closeSync(fd)
    fs.rmSync(out, { force: true })
    if (error instanceof ArchiveRefused) throw error
    throw new ArchiveRefused(`the archive is not a readable .tar.gz: ${(error as Error).message}`)
  }
  if (fd !== undefined) {
    fs.closeSync(fd)
    fs.rmSync(out, { force: true })
    throw new ArchiveRefused(`the archive ends inside ${wanted}`)
  }
  return found
}
