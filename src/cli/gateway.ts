import { Command, Options } from "@effect/cli"
import { GatewayLive } from "./Layers.js"
import { lazyRun } from "./Lazy.js"
import { integerOption } from "./Output.js"

const impl = lazyRun(() => import("./run/gateway.js"))

export const gatewayConfig = {
  target: Options.text("target").pipe(
    Options.optional,
    Options.withDescription("The registry target this host is (default: KEEL_HOST, then the hostname)")
  ),
  port: integerOption("port", 0, 65535).pipe(
    Options.optional,
    Options.withDescription("Listen here instead of the runner's gateway_port (0: any free port)")
  )
}

/** `ctl host gateway`: the pre-check runner's loopback gateway on this host, until stopped (docs/runners.md). */
export const gateway = Command.make("gateway", gatewayConfig, (args) => impl((m) => m.gateway(args))).pipe(
  Command.withDescription(
    "Serve the pre-check runner's gateway: signed job requests from the runner, forwarded to the control plane"
  ),
  Command.provide(GatewayLive)
)
