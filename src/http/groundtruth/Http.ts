import { HttpApiBuilder, HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Layer, Option } from "effect"
import { GroundTruthApi, GroundTruthAuth, GtHostNotAllowed, GtUnauthorized } from "../../contracts/groundtruth/Api.js"
import { Answerer } from "../../services/groundtruth/Answerer.js"
import { BrandAssets } from "../../services/groundtruth/BrandAssets.js"
import { GtConfig } from "../../services/groundtruth/GtConfig.js"
import { Ingester } from "../../services/groundtruth/Ingester.js"
import { Retriever } from "../../services/groundtruth/Retriever.js"
import { bearerToken } from "../../services/platform/Credentials.js"
import { Health } from "../../services/platform/Health.js"
import { LoopbackTrust } from "../../services/platform/LoopbackTrust.js"

export const GroundTruthHealthLive = HttpApiBuilder.group(GroundTruthApi, "health", (handlers) =>
  handlers.handle("health", () => Health.use((health) => health.check))
)

/**
 * GT_TOKENS set: a valid bearer token. Unset: the loopback rule (LoopbackTrust) — a loopback client naming a
 * loopback `Host` or one of KEEL_SERVER_NAMES. The header is read as sent (the scheme in any case, as everywhere);
 * the platform's decoded credential is not used.
 */
export const GroundTruthAuthLive = Layer.effect(
  GroundTruthAuth,
  Effect.gen(function* () {
    const config = yield* GtConfig
    const loopback = yield* LoopbackTrust
    if (config.tokens.size === 0) {
      yield* Effect.logWarning("GT_TOKENS is not set: the ground-truth surface answers loopback clients only")
    }
    // RFC 9110: a 401 names the scheme that would be accepted.
    const challenge = HttpApp.appendPreResponseHandler((_request, response) =>
      Effect.succeed(HttpServerResponse.setHeader(response, "www-authenticate", 'Bearer realm="keel-groundtruth"'))
    )
    const authorize = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      if (config.tokens.size === 0) {
        const refusal = loopback.refusal(Option.getOrUndefined(request.remoteAddress), request.headers, request.url)
        if (refusal === undefined) return
        if (refusal === "host-not-allowed")
          return yield* new GtHostNotAllowed({
            code: "HOST_NOT_ALLOWED",
            detail:
              "no GT_TOKENS configured: only a loopback Host (localhost, 127.x.y.z, [::1]) or one of KEEL_SERVER_NAMES is answered"
          })
        yield* challenge
        return yield* new GtUnauthorized({
          code: "UNAUTHORIZED",
          detail: "no GT_TOKENS configured: loopback clients only"
        })
      }
      const token = bearerToken(request.headers.authorization)
      if (token === undefined || !config.tokens.has(token)) {
        yield* challenge
        return yield* new GtUnauthorized({ code: "UNAUTHORIZED", detail: "a valid bearer token is required" })
      }
    })
    return GroundTruthAuth.of({ bearer: () => authorize })
  })
)

export const GroundTruthReadLive = HttpApiBuilder.group(GroundTruthApi, "read", (handlers) =>
  handlers
    .handle("repos", () => Retriever.use((retriever) => retriever.repos()))
    .handle("search", ({ urlParams }) =>
      Retriever.use((retriever) =>
        retriever.search(urlParams.q, {
          repos: urlParams.repo === undefined ? undefined : [urlParams.repo],
          limit: urlParams.limit
        })
      )
    )
)

export const GroundTruthIngestLive = HttpApiBuilder.group(GroundTruthApi, "ingest", (handlers) =>
  handlers.handle("repo", ({ payload }) =>
    Ingester.use((ingester) =>
      ingester
        .ingest(payload)
        .pipe(Effect.catchTag("SourceRegistryUnreachable", (error) => Effect.fail(error.overHttp)))
    )
  )
)

export const GroundTruthAskLive = HttpApiBuilder.group(GroundTruthApi, "ask", (handlers) =>
  handlers.handle("ask", ({ payload }) =>
    Answerer.use((answerer) => answerer.ask(payload.question, payload.scope.repos, payload.k))
  )
)

export const GroundTruthAssetsLive = HttpApiBuilder.group(GroundTruthApi, "assets", (handlers) =>
  handlers
    .handle("list", ({ urlParams }) => BrandAssets.use((assets) => assets.search(urlParams)))
    .handle("products", () => BrandAssets.use((assets) => assets.products))
    .handle("kinds", () => BrandAssets.use((assets) => assets.kinds))
    .handle("ofKind", ({ path }) => BrandAssets.use((assets) => assets.ofKind(path.product, path.kind)))
    .handle("content", ({ path }) =>
      Effect.map(
        BrandAssets.use((assets) => assets.content(path.product, path.kind, path.assetIndex)),
        ({ bytes, contentType }) =>
          HttpServerResponse.uint8Array(bytes, {
            contentType,
            // An asset's bytes are the repository's, not the service's: an SVG with a script, opened from its
            // link, must not run on this origin (GitHub's raw host serves them the same way).
            headers: {
              "x-content-type-options": "nosniff",
              "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; sandbox"
            }
          })
      )
    )
)
