import { Command, Options } from "@effect/cli"
import { ServedNames } from "../http/SurfaceNames.js"
import { lazyRun } from "./Lazy.js"
import { integerOption } from "./Output.js"

const impl = lazyRun(() => import("./run/serve.js"))

const surface = Options.choice("surface", ServedNames).pipe(
  Options.repeated,
  Options.withDescription("Serve only this surface (repeatable; `ui` is the web dashboard); all of them when omitted")
)
const port = integerOption("port", 0, 65535).pipe(
  Options.optional,
  Options.withDescription("Port to listen on (default KEEL_HTTP_PORT, 8080)")
)
const host = Options.text("host").pipe(
  Options.optional,
  Options.withDescription("Address to listen on (default KEEL_HTTP_HOST, 127.0.0.1)")
)

export const serve = Command.make("serve", { surface, port, host }, (args) => impl((m) => m.serve(args))).pipe(
  Command.withDescription("Run the HTTP server: every surface on one port, or the chosen ones")
)
