import { HttpApiBuilder, HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Layer } from "effect"
import { VaultApi, VaultNoStore } from "../../contracts/vault/Api.js"
import { VaultDenied } from "../../contracts/vault/Errors.js"
import { bearerToken } from "../../services/platform/Credentials.js"
import { Vault } from "../../services/platform/vault/Vault.js"
import { routePath } from "../RoutePath.js"

/** No cache, proxy or browser may keep a vault answer: success and refusal alike. */
export const NO_STORE_HEADERS = { "cache-control": "no-store", pragma: "no-cache" } as const

export const VaultNoStoreLive = Layer.succeed(
  VaultNoStore,
  HttpApp.appendPreResponseHandler((_request, response) =>
    Effect.succeed(HttpServerResponse.setHeaders(response, NO_STORE_HEADERS))
  )
)

/**
 * The same headers on every answer under `/v1/vault/` the vault's own handlers never see: the body guard's
 * 400/413/415, the router's 404 (wraps the app after problem bodies are made, so failures are answers here).
 */
export const vaultPathsNoStore = <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    routePath(request.url).startsWith("/v1/vault")
      ? Effect.map(app, (response) => HttpServerResponse.setHeaders(response, NO_STORE_HEADERS))
      : app
  )

const requireBearer = (header: string | undefined) => {
  const token = bearerToken(header)
  return token === undefined
    ? Effect.fail(new VaultDenied({ code: "VAULT_DENIED", detail: "Authorization: Bearer <token> is required" }))
    : Effect.succeed(token)
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
          const token = yield* requireBearer(headers.authorization)
          return { value: yield* vault.readField(token, `${path.item}#${path.field}`) }
        })
      )
  })
)
