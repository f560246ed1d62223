import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { HostHealth } from "../../services/fleet/beacon/HostHealth.js"
import { bearerToken } from "../../services/platform/Credentials.js"
import { VaultDenied } from "../../services/platform/vault/Vault.js"
import { ControlPlaneApi } from "./Api.js"

export const HostHealthLive = HttpApiBuilder.group(ControlPlaneApi, "hostHealth", (handlers) =>
  Effect.gen(function* () {
    const health = yield* HostHealth
    return handlers.handle("put", ({ headers, payload }) =>
      Effect.gen(function* () {
        const token = bearerToken(headers.authorization)
        if (token === undefined)
          return yield* new VaultDenied({
            code: "VAULT_DENIED",
            detail: "Authorization: Bearer <vault token> is required"
          })
        return yield* health.store(token, payload)
      })
    )
  })
)
