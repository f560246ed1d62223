import { Command, Options } from "@effect/cli"
import { Effect, Layer } from "effect"
import { SurfaceNames } from "../http/Surfaces.js"
import { serverLive } from "../layers/Server.js"
import { integerOption } from "./Output.js"

const surface = Options.choice("surface", SurfaceNames).pipe(
  Options.repeated,
  Options.withDescription("Serve only this surface (repeatable); all surfaces when omitted")
)
const port = integerOption("port", 0, 65535).pipe(
  Options.optional,
  Options.withDescription("Port to listen on (default KEEL_HTTP_PORT, 8080)")
)
const host = Options.text("host").pipe(
  Options.optional,
  Options.withDescription("Address to listen on (default KEEL_HTTP_HOST, 127.0.0.1)")
)

/**
 * The server owns the data dir: what it and its children create there (objects, git mirrors, registries) is
 * owner-only unless Keel states a mode on purpose, as PostgreSQL's server does (umask 077, docs/security.md).
 */
const ownerOnlyFiles = Effect.sync(() => process.umask(0o077))

export const serve = Command.make("serve", { surface, port, host }, ({ host, port, surface }) =>
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
).pipe(Command.withDescription("Run the HTTP server: every surface on one port, or the chosen ones"))
