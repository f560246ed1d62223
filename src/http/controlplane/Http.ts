import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { HostHealth } from "../../services/fleet/beacon/HostHealth.js"
import { bearerToken } from "../../services/platform/Credentials.js"
import { ControlPlaneApi } from "./Api.js"

export const HostHealthLive = HttpApiBuilder.group(ControlPlaneApi, "hostHealth", (handlers) =>
  Effect.gen(function* () {
    const health = yield* HostHealth
    return handlers.handle("put", ({ headers, payload }) =>
      Effect.gen(function* () {
        return yield* health.store(bearerToken(headers.authorization), payload)
      })
    )
  })
)
