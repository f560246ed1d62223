import { createHash, randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Chunk, Effect, Layer, Option, Stream } from "effect"
import { ObjectStoreError } from "../../../contracts/shared/ObjectErrors.js"
import { sha256Hex } from "../Digest.js"
import { withFileLock } from "../FileLock.js"
import { keyProblem, type ObjectHead, ObjectStore, type WriteCondition } from "./ObjectStore.js"

/** Temporary files live beside their target (same filesystem, so rename is atomic) under this prefix. */
const TEMP_PREFIX = ".keel-tmp-"
/** A key's write lock lives beside it under this prefix (never listed, like temporary files). */
const LOCK_PREFIX = ".keel-lock-"

/**
 * Runs `critical` holding the write lock of `file`. Replacing, comparing-and-replacing and deleting a key
 * take it, so a compare-and-set is atomic against every other write of the key, in this process or another.
 * The bytes are written to a temporary file before the lock is taken: it is held for a comparison and a
 * rename only.
 */
const withKeyLock = <A>(file: string, critical: () => Promise<A>): Promise<A> =>
  withFileLock(path.join(path.dirname(file), `${LOCK_PREFIX}${path.basename(file)}`), critical)

/**
 * A failure as clients may read it: the system error's code and what it means for the key, never the server's
 * paths (Node's messages quote them). A key that is both an object and the prefix of others is the one thing a
 * file store cannot hold, where a bucket could.
 */
const failure = (root: string, key: string) => (cause: unknown) => {
  const code = (cause as NodeJS.ErrnoException | undefined)?.code
  const detail =
    code === "EISDIR" || code === "ENOTDIR" || code === "EEXIST"
      ? `${key} cannot be stored beside the keys it conflicts with: the file store holds no key that is both an object and a prefix of other keys (${code})`
      : typeof code === "string"
        ? `the file store failed on ${key} (${code})`
        : // Keel's own messages (a lock wait that timed out) say what happened; the store's root is not shown.
          (cause instanceof Error ? cause.message : String(cause)).replaceAll(root, "<object store>")
  return new ObjectStoreError({ code: "OBJECT_STORE_ERROR", key, detail })
}

const isMissing = (cause: unknown) =>
  typeof cause === "object" &&
  cause !== null &&
  "code" in cause &&
  (cause.code === "ENOENT" || cause.code === "ENOTDIR")

/** Durably writes `bytes` to a fresh temporary file in `dir` and answers its path. */
const writeTemp = async (dir: string, bytes: Uint8Array) => {
  await fs.mkdir(dir, { recursive: true })
  const temp = path.join(dir, `${TEMP_PREFIX}${randomBytes(8).toString("hex")}`)
  const handle = await fs.open(temp, "wx", 0o644)
  try {
    await handle.writeFile(bytes)
    await handle.sync()
  } finally {
    await handle.close()
  }
  return temp
}

const READ_CHUNK = 1024 * 1024

/** Size and SHA-256 of an open file, read in 1 MiB chunks (never the whole file in memory). */
const digestOf = async (handle: fs.FileHandle) => {
  const hash = createHash("sha256")
  const buffer = Buffer.allocUnsafe(READ_CHUNK)
  let size = 0
  for (;;) {
    const { bytesRead } = await handle.read(buffer, 0, READ_CHUNK, size)
    if (bytesRead === 0) break
    hash.update(buffer.subarray(0, bytesRead))
    size += bytesRead
  }
  return { size, sha256: hash.digest("hex") }
}

/** Opens a regular file for reading; undefined when it is absent (or not a regular file). */
const openExisting = async (file: string) => {
  try {
    const handle = await fs.open(file, "r")
    const stat = await handle.stat()
    if (stat.isFile()) return { handle, stat }
    await handle.close()
    return undefined
  } catch (cause) {
    if (isMissing(cause) || (cause as { code?: string }).code === "EISDIR") return undefined
    throw cause
  }
}

/** Makes a rename or link in `dir` durable. */
const syncDir = async (dir: string) => {
  const handle = await fs.open(dir, "r")
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

/**
 * Objects as files under `root`, one file per key. Writes are atomic (temporary file, fsync, rename,
 * fsync of the directory); create-only writes use link(2), which fails if the name exists.
 */
export const makeFsObjectStore = (root: string): ObjectStore["Type"] => {
  const fileOf = (key: string) => {
    const problem = keyProblem(key)
    if (problem !== undefined) throw new Error(`${problem}: ${JSON.stringify(key)}`)
    return path.join(root, ...key.split("/"))
  }
  const headOf = (key: string, bytes: Uint8Array, modifiedAt: number): ObjectHead => ({
    key,
    size: bytes.byteLength,
    sha256: sha256Hex(bytes),
    modifiedAt
  })
  const attempt = <A>(key: string, run: () => Promise<A>) => Effect.tryPromise({ try: run, catch: failure(root, key) })

  /** A file's head, hashed as it is read: a large object never sits in memory. */
  const fileHead = async (key: string, file: string): Promise<Option.Option<ObjectHead>> => {
    const opened = await openExisting(file)
    if (opened === undefined) return Option.none()
    try {
      const { size, sha256 } = await digestOf(opened.handle)
      return Option.some({ key, size, sha256, modifiedAt: opened.stat.mtimeMs })
    } finally {
      await opened.handle.close()
    }
  }

  /** Stores the temporary file `temp` (of `head`'s bytes) at `file` when `condition` allows. */
  const commit = async (
    key: string,
    file: string,
    temp: string,
    condition: WriteCondition,
    size: number,
    sha256: string
  ) => {
    const received = { size, sha256 }
    const written = async () => {
      await syncDir(path.dirname(file))
      const modifiedAt = (await fs.stat(file)).mtimeMs
      return { written: true, received, head: Option.some({ key, size, sha256, modifiedAt }) }
    }
    if (condition.kind === "absent") {
      try {
        await fs.link(temp, file)
        return await written()
      } catch (cause) {
        if ((cause as { code?: string }).code !== "EEXIST") throw cause
        return { written: false, received, head: await fileHead(key, file) }
      }
    }
    return withKeyLock(file, async () => {
      if (condition.kind === "match") {
        const current = await fileHead(key, file)
        if (Option.isNone(current) || current.value.sha256 !== condition.sha256)
          return { written: false, received, head: current }
      }
      await fs.rename(temp, file)
      return written()
    })
  }

  const get = (key: string) =>
    attempt(key, async () => {
      const file = fileOf(key)
      try {
        const [bytes, stat] = await Promise.all([fs.readFile(file), fs.stat(file)])
        if (!stat.isFile()) return Option.none()
        return Option.some({ ...headOf(key, bytes, stat.mtimeMs), bytes: new Uint8Array(bytes) })
      } catch (cause) {
        if (isMissing(cause) || (cause as { code?: string }).code === "EISDIR") return Option.none()
        throw cause
      }
    })

  return {
    scheme: "fs",
    get,
    head: (key) => attempt(key, () => fileHead(key, fileOf(key))),
    put: (key, bytes) =>
      attempt(key, async () => {
        const file = fileOf(key)
        const temp = await writeTemp(path.dirname(file), bytes)
        return withKeyLock(file, async () => {
          await fs.rename(temp, file)
          await syncDir(path.dirname(file))
          return headOf(key, bytes, (await fs.stat(file)).mtimeMs)
        }).finally(() => fs.rm(temp, { force: true }))
      }),
    putIfMatch: (key, expected, bytes) =>
      attempt(key, async () => {
        const file = fileOf(key)
        const temp = await writeTemp(path.dirname(file), bytes)
        return withKeyLock(file, async () => {
          const current = await fs.readFile(file).then(
            (existing) => Option.some(existing),
            (cause) => {
              if (isMissing(cause) || (cause as { code?: string }).code === "EISDIR") return Option.none<Buffer>()
              throw cause
            }
          )
          if (Option.isNone(current) || sha256Hex(current.value) !== expected) {
            const head = Option.isNone(current)
              ? Option.none<ObjectHead>()
              : Option.some(headOf(key, current.value, (await fs.stat(file)).mtimeMs))
            return { replaced: false, head }
          }
          await fs.rename(temp, file)
          await syncDir(path.dirname(file))
          return { replaced: true, head: Option.some(headOf(key, bytes, (await fs.stat(file)).mtimeMs)) }
        }).finally(() => fs.rm(temp, { force: true }))
      }),
    putIfAbsent: (key, bytes) =>
      attempt(key, async () => {
        const file = fileOf(key)
        const temp = await writeTemp(path.dirname(file), bytes)
        try {
          await fs.link(temp, file)
          await syncDir(path.dirname(file))
          return { created: true, head: headOf(key, bytes, (await fs.stat(file)).mtimeMs) }
        } catch (cause) {
          if ((cause as { code?: string }).code !== "EEXIST") throw cause
          const existing = await fs.readFile(file)
          return { created: false, head: headOf(key, existing, (await fs.stat(file)).mtimeMs) }
        } finally {
          await fs.rm(temp, { force: true })
        }
      }),
    list: (prefix, page = {}) =>
      attempt(prefix, async () => {
        // Keys first (a directory walk), then the page; only the page's files are read and hashed.
        const files: Array<{ readonly key: string; readonly file: string }> = []
        const walk = async (dir: string, keyPrefix: string): Promise<void> => {
          let entries: Array<import("node:fs").Dirent>
          try {
            entries = await fs.readdir(dir, { withFileTypes: true })
          } catch (cause) {
            if (isMissing(cause)) return
            throw cause
          }
          for (const entry of entries) {
            if (entry.name.startsWith(TEMP_PREFIX) || entry.name.startsWith(LOCK_PREFIX)) continue
            const key = `${keyPrefix}${entry.name}`
            // Only descend where keys below could still start with the prefix.
            if (entry.isDirectory() && (prefix.startsWith(`${key}/`) || `${key}/`.startsWith(prefix)))
              await walk(path.join(dir, entry.name), `${key}/`)
            else if (entry.isFile() && key.startsWith(prefix)) files.push({ key, file: path.join(dir, entry.name) })
          }
        }
        await walk(root, "")
        const after = page.after
        const selected = files
          .filter((f) => after === undefined || f.key > after)
          .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
          .slice(0, page.limit ?? Number.POSITIVE_INFINITY)
        const heads: Array<ObjectHead> = []
        for (const { key, file } of selected) {
          const head = await fileHead(key, file)
          if (Option.isSome(head)) heads.push(head.value)
        }
        return heads
      }),
    write: (key, body, condition) =>
      Effect.gen(function* () {
        const file = yield* attempt(key, async () => fileOf(key))
        const dir = path.dirname(file)
        yield* attempt(key, () => fs.mkdir(dir, { recursive: true }))
        const temp = path.join(dir, `${TEMP_PREFIX}${randomBytes(8).toString("hex")}`)
        return yield* Effect.acquireUseRelease(
          attempt(key, () => fs.open(temp, "wx", 0o644)),
          (handle) =>
            Effect.gen(function* () {
              // The body goes to the temporary file chunk by chunk, hashed on the way.
              const hash = createHash("sha256")
              let size = 0
              yield* Stream.runForEach(body, (chunk) =>
                attempt(key, async () => {
                  hash.update(chunk)
                  size += chunk.byteLength
                  await handle.write(chunk)
                })
              )
              yield* attempt(key, () => handle.sync())
              yield* attempt(key, () => handle.close())
              const sha256 = hash.digest("hex")
              return yield* attempt(key, () => commit(key, file, temp, condition, size, sha256))
            }),
          (handle) =>
            Effect.promise(async () => {
              await handle.close().catch(() => undefined)
              await fs.rm(temp, { force: true })
            })
        )
      }),
    read: (key) =>
      attempt(key, async () => {
        const opened = await openExisting(fileOf(key))
        if (opened === undefined) return Option.none()
        const { size, sha256 } = await digestOf(opened.handle).catch(async (cause) => {
          await opened.handle.close()
          throw cause
        })
        const head: ObjectHead = { key, size, sha256, modifiedAt: opened.stat.mtimeMs }
        // The stream reads the same open file (a rename over the key does not change what it reads).
        let offset = 0
        const body = Stream.paginateChunkEffect(undefined, () =>
          attempt(key, async () => {
            const buffer = Buffer.allocUnsafe(READ_CHUNK)
            const { bytesRead } = await opened.handle.read(buffer, 0, READ_CHUNK, offset)
            offset += bytesRead
            const chunk = Chunk.of(new Uint8Array(buffer.buffer, buffer.byteOffset, bytesRead))
            return bytesRead === 0 ? [Chunk.empty<Uint8Array>(), Option.none()] : [chunk, Option.some(undefined)]
          })
        ).pipe(Stream.ensuring(Effect.promise(() => opened.handle.close())))
        return Option.some({ head, body })
      }),
    delete: (key) =>
      attempt(key, async () => {
        const file = fileOf(key)
        try {
          await fs.access(path.dirname(file))
        } catch (cause) {
          if (isMissing(cause)) return false
          throw cause
        }
        return withKeyLock(file, async () => {
          try {
            await fs.unlink(file)
            return true
          } catch (cause) {
            if (isMissing(cause)) return false
            throw cause
          }
        })
      })
  }
}

export const FsObjectStoreLayer = (root: string) => Layer.sync(ObjectStore, () => makeFsObjectStore(root))
