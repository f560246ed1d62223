import * as fs from "node:fs/promises"
import { Context, Effect, Layer } from "effect"

/** Free space as the janitor sees it: bytes available to an unprivileged writer on `path`'s filesystem. */
export class DiskMeter extends Context.Tag("fleet/DiskMeter")<
  DiskMeter,
  { readonly available: (path: string) => Effect.Effect<number, Error> }
>() {
  static readonly Live = Layer.succeed(DiskMeter, {
    available: (path) =>
      Effect.tryPromise({
        try: async () => {
          const s = await fs.statfs(path, { bigint: true })
          return Number(s.bavail * s.bsize)
        },
        catch: (error) => new Error(`statfs ${path}: ${(error as Error).message}`)
      })
  })
}
