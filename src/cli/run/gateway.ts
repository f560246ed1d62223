import { Console, Effect, Option } from "effect"
import { RunnerGateway } from "../../services/fleet/agent/runners/RunnerGateway.js"
import { thisHostName } from "../../services/platform/AppConfig.js"
import type { gatewayConfig } from "../gateway.js"
import type { Parsed } from "../Lazy.js"
import { failWith } from "../Output.js"

export const gateway = ({ port, target }: Parsed<typeof gatewayConfig>) =>
  Effect.gen(function* () {
    const name = Option.isSome(target) ? target.value : yield* thisHostName.pipe(Effect.orDie)
    const serving = yield* (yield* RunnerGateway)
      .serve(name, Option.isSome(port) ? { port: port.value } : {})
      .pipe(Effect.catchAll(failWith(false)))
    yield* Console.error(`Listening on ${serving.url} (agent ${serving.agentId})`)
    return yield* Effect.never
  }).pipe(Effect.scoped)
