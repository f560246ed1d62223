import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Vault, VaultDenied } from "../../services/platform/vault/Vault.js"
import { VaultApi } from "./Api.js"

const bearerToken = (header: string | undefined) => {
  const match = /^Bearer (\S+)$/.exec(header ?? "")
  return match?.[1] === undefined
    ? Effect.fail(new VaultDenied({ code: "VAULT_DENIED", detail: "Authorization: Bearer <token> is required" }))
    : Effect.succeed(match[1])
}

export const VaultTokensLive = HttpApiBuilder.group(VaultApi, "tokens", (handlers) =>
  Effect.gen(function* () {
    const vault = yield* Vault
    return handlers
      .handle("exchange", ({ payload }) =>
        Effect.map(vault.exchange(payload), (issued) => ({
          token: issued.token,
          expires_at: new Date(issued.expiresAt).toISOString(),
          consumer: issued.grant.consumer,
          actions: issued.grant.actions,
          hosts: issued.grant.hosts,
          items: issued.grant.items
        }))
      )
      .handle("read", ({ headers, path }) =>
        Effect.gen(function* () {
          const token = yield* bearerToken(headers.authorization)
          return { value: yield* vault.readField(token, `${path.item}#${path.field}`) }
        })
      )
  })
)
