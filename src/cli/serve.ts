import { Command, Options } from "@effect/cli"
import { Layer } from "effect"
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

export const serve = Command.make("serve", { surface, port, host }, ({ host, port, surface }) =>
  Layer.launch(
    serverLive({
      surfaces: surface,
      ...(port._tag === "Some" ? { port: port.value } : {}),
      ...(host._tag === "Some" ? { host: host.value } : {})
    })
  )
).pipe(Command.withDescription("Run the HTTP server: every surface on one port, or the chosen ones"))
