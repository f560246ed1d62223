import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { ControlPlaneApi } from "../../contracts/controlplane/Api.js"
import { HostHealth } from "../../services/fleet/control/beacon/HostHealth.js"
import { bearerToken } from "../../services/platform/Credentials.js"

export const HostHealthLive = HttpApiBuilder.group(ControlPlaneApi, "hostHealth", (handlers) =>
  Effect.gen(function* () {
    const health = yield* HostHealth
    // `payload` is the body as sent (the contract describes it as a beacon; the service validates it after the token).
    return handlers.handle("put", ({ headers, payload }) =>
      Effect.gen(function* () {
        return yield* health.store(bearerToken(headers.authorization), payload)
      })
    )
  })
)
