import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, Option, Stream } from "effect"
import { fileDigest } from "../../../platform/Digest.js"
import type { ObjectStore } from "../../../platform/objects/ObjectStore.js"
import { type ReleaseReader, ReleaseReadFailed, releaseKey } from "../../shared/releases/ReleaseManifest.js"

/** A release's files as the object store holds them, read through (a stored digest is not trusted). */
export const objectStoreReader = (store: ObjectStore["Type"], product: string, version: string): ReleaseReader => {
  const failed = (file: string) => (error: { readonly detail?: string; readonly message?: string }) =>
    new ReleaseReadFailed({ file, detail: error.detail ?? error.message ?? "unreadable" })
  return {
    bytes: (file, cap) =>
      Effect.gen(function* () {
        const found = yield* store.read(releaseKey(product, version, file)).pipe(Effect.mapError(failed(file)))
        if (Option.isNone(found)) return null
        if (found.value.head.size > cap)
          return yield* new ReleaseReadFailed({ file, detail: `${found.value.head.size} bytes, above ${cap}` })
        const chunks = yield* Stream.runCollect(found.value.body).pipe(Effect.mapError(failed(file)))
        const bytes = Buffer.concat([...chunks])
        if (bytes.byteLength > cap) return yield* new ReleaseReadFailed({ file, detail: `more than ${cap} bytes` })
        return new Uint8Array(bytes)
      }),
    digest: (file) =>
      Effect.gen(function* () {
        const found = yield* store.read(releaseKey(product, version, file)).pipe(Effect.mapError(failed(file)))
        if (Option.isNone(found)) return null
        const hash = createHash("sha256")
        let size = 0
        yield* Stream.runForEach(found.value.body, (chunk) =>
          Effect.sync(() => {
            hash.update(chunk)
            size += chunk.byteLength
          })
        ).pipe(Effect.mapError(failed(file)))
        return { sha256: hash.digest("hex"), size }
      })
  }
}

/** A release's files in a directory (`ctl release catalog sync --root`), streamed from disk. */
export const directoryReader = (dir: string): ReleaseReader => {
  const failed = (file: string) => (error: unknown) =>
    new ReleaseReadFailed({ file, detail: error instanceof Error ? error.message : String(error) })
  const exists = (file: string) => {
    try {
      return fs.lstatSync(path.join(dir, file)).isFile()
    } catch {
      return false
    }
  }
  return {
    bytes: (file, cap) =>
      Effect.try({
        try: () => {
          if (!exists(file)) return null
          const size = fs.statSync(path.join(dir, file)).size
          if (size > cap) throw new Error(`${size} bytes, above ${cap}`)
          return new Uint8Array(fs.readFileSync(path.join(dir, file)))
        },
        catch: failed(file)
      }),
    digest: (file) =>
      Effect.tryPromise({
        try: async () => (exists(file) ? await fileDigest(path.join(dir, file)) : null),
        catch: failed(file)
      })
  }
}
