import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Effect, Layer, Option } from "effect"
import { sha256Hex } from "../Digest.js"
import { keyProblem, type ObjectHead, ObjectStore, ObjectStoreError } from "./ObjectStore.js"

/** Temporary files live beside their target (same filesystem, so rename is atomic) under this prefix. */
const TEMP_PREFIX = ".keel-tmp-"
/** A key's write lock lives beside it under this prefix (never listed, like temporary files). */
const LOCK_PREFIX = ".keel-lock-"
/** A lock older than this whose holder process is gone was left by a crash and is broken. */
const STALE_LOCK_MILLIS = 10_000
/** How long a writer waits for a key's lock before failing. */
const LOCK_WAIT_MILLIS = 30_000

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (cause) {
    return (cause as { code?: string }).code === "EPERM"
  }
}

/**
 * Runs `critical` holding the write lock of `file`: a lock file created with O_EXCL beside it, holding the
 * holder's pid. Replacing, comparing-and-replacing and deleting a key take it, so a compare-and-set is
 * atomic against every other write of the key, in this process or another. The bytes are written to a
 * temporary file before the lock is taken: it is held for a comparison and a rename only.
 */
const withKeyLock = async <A>(file: string, critical: () => Promise<A>): Promise<A> => {
  const dir = path.dirname(file)
  const lock = path.join(dir, `${LOCK_PREFIX}${path.basename(file)}`)
  await fs.mkdir(dir, { recursive: true })
  const deadline = Date.now() + LOCK_WAIT_MILLIS
  for (;;) {
    try {
      const handle = await fs.open(lock, "wx", 0o600)
      try {
        await handle.writeFile(String(process.pid))
      } finally {
        await handle.close()
      }
      break
    } catch (cause) {
      if ((cause as { code?: string }).code !== "EEXIST") throw cause
      const holder = await fs
        .readFile(lock, "utf8")
        .then((text) => ({ pid: Number(text) }))
        .catch(() => undefined)
      const stat = await fs.stat(lock).catch(() => undefined)
      if (holder !== undefined && stat !== undefined && Date.now() - stat.mtimeMs > STALE_LOCK_MILLIS) {
        if (!Number.isInteger(holder.pid) || holder.pid <= 0 || !isAlive(holder.pid)) {
          await fs.rm(lock, { force: true })
          continue
        }
      }
      if (Date.now() > deadline) throw new Error(`timed out waiting for the write lock of ${path.basename(file)}`)
      await new Promise((resolve) => setTimeout(resolve, 2 + Math.random() * 8))
    }
  }
  try {
    return await critical()
  } finally {
    await fs.rm(lock, { force: true })
  }
}

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
            if (entry.name.startsWith(TEMP_PREFIX) || entry.name.startsWith(LOCK_PREFIX)) continue
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
