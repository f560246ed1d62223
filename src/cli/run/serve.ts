import { Effect, Layer, type Option } from "effect"
import type { ServedName } from "../../http/SurfaceNames.js"
import { serverLive } from "../../layers/Server.js"

/**
 * The server owns the data dir: what it and its children create there (objects, git mirrors, registries) is
 * owner-only unless Keel states a mode on purpose, as PostgreSQL's server does (umask 077, docs/security.md).
 */
const ownerOnlyFiles = Effect.sync(() => process.umask(0o077))

export const serve = ({
  host,
  port,
  surface
}: {
  readonly host: Option.Option<string>
  readonly port: Option.Option<number>
  readonly surface: ReadonlyArray<ServedName>
}) =>
  Effect.zipRight(
    ownerOnlyFiles,
    Layer.launch(
      serverLive({
        surfaces: surface,
        ...(port._tag === "Some" ? { port: port.value } : {}),
        ...(host._tag === "Some" ? { host: host.value } : {})
      })
    )
  )
