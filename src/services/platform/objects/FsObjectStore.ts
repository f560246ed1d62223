import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Effect, Layer, Option } from "effect"
import { sha256Hex } from "../Digest.js"
import { keyProblem, type ObjectHead, ObjectStore, ObjectStoreError } from "./ObjectStore.js"

/** Temporary files live beside their target (same filesystem, so rename is atomic) under this prefix. */
const TEMP_PREFIX = ".keel-tmp-"

const failure = (key: string) => (cause: unknown) =>
  new ObjectStoreError({
    code: "OBJECT_STORE_ERROR",
    key,
    detail: cause instanceof Error ? cause.message : String(cause)
  })

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
  const attempt = <A>(key: string, run: () => Promise<A>) => Effect.tryPromise({ try: run, catch: failure(key) })

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
    head: (key) =>
      Effect.map(
        get(key),
        Option.map(({ bytes: _bytes, ...head }) => head)
      ),
    put: (key, bytes) =>
      attempt(key, async () => {
        const file = fileOf(key)
        const temp = await writeTemp(path.dirname(file), bytes)
        await fs.rename(temp, file)
        await syncDir(path.dirname(file))
        return headOf(key, bytes, (await fs.stat(file)).mtimeMs)
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
    list: (prefix) =>
      attempt(prefix, async () => {
        const heads: Array<ObjectHead> = []
        const walk = async (dir: string, keyPrefix: string): Promise<void> => {
          let entries: Array<import("node:fs").Dirent>
          try {
            entries = await fs.readdir(dir, { withFileTypes: true })
          } catch (cause) {
            if (isMissing(cause)) return
            throw cause
          }
          for (const entry of entries) {
            if (entry.name.startsWith(TEMP_PREFIX)) continue
            const key = `${keyPrefix}${entry.name}`
            // Only descend where keys below could still start with the prefix.
            if (entry.isDirectory() && (prefix.startsWith(`${key}/`) || `${key}/`.startsWith(prefix)))
              await walk(path.join(dir, entry.name), `${key}/`)
            else if (entry.isFile() && key.startsWith(prefix)) {
              const file = path.join(dir, entry.name)
              const bytes = await fs.readFile(file)
              heads.push(headOf(key, bytes, (await fs.stat(file)).mtimeMs))
            }
          }
        }
        await walk(root, "")
        return heads.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
      }),
    delete: (key) =>
      attempt(key, async () => {
        try {
          await fs.unlink(fileOf(key))
          return true
        } catch (cause) {
          if (isMissing(cause)) return false
          throw cause
        }
      })
  }
}

export const FsObjectStoreLayer = (root: string) => Layer.sync(ObjectStore, () => makeFsObjectStore(root))
