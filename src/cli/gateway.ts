import { Command, Options } from "@effect/cli"
import { Console, Effect, Option } from "effect"
import { GatewayLive } from "../layers/Live.js"
import { RunnerGateway } from "../services/fleet/runners/RunnerGateway.js"
import { thisHostName } from "../services/platform/AppConfig.js"
import { failWith, integerOption } from "./Output.js"

/** `ctl host gateway`: the pre-check runner's loopback gateway on this host, until stopped (docs/runners.md). */
export const gateway = Command.make(
  "gateway",
  {
    target: Options.text("target").pipe(
      Options.optional,
      Options.withDescription("The registry target this host is (default: KEEL_HOST, then the hostname)")
    ),
    port: integerOption("port", 0, 65535).pipe(
      Options.optional,
      Options.withDescription("Listen here instead of the runner's gateway_port (0: any free port)")
    )
  },
  ({ port, target }) =>
    Effect.gen(function* () {
      const name = Option.isSome(target) ? target.value : yield* thisHostName.pipe(Effect.orDie)
      const serving = yield* (yield* RunnerGateway)
        .serve(name, Option.isSome(port) ? { port: port.value } : {})
        .pipe(Effect.catchAll(failWith(false)))
      yield* Console.error(`Listening on ${serving.url} (agent ${serving.agentId})`)
      return yield* Effect.never
    }).pipe(Effect.scoped)
).pipe(
  Command.withDescription(
    "Serve the pre-check runner's gateway: signed job requests from the runner, forwarded to the control plane"
  ),
  Command.provide(GatewayLive)
)
