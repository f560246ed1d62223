import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { ControlPlaneApi } from "../../contracts/controlplane/Api.js"
import { ObjectAccess } from "../../services/fleet/control/objects/ObjectAccess.js"
import { bearerToken } from "../../services/platform/Credentials.js"

/**
 * The object API: ObjectAccess reads the request (the key as the path spells it, the condition headers) and holds
 * the rules; bodies stream both ways. Reads are authorized by FleetAuth (object-read). Writes and deletes read
 * their own `Authorization`: the action they need follows the key (a host's beacon or state, a release, anything
 * else), and the middleware knows the route only, never the key a request names.
 */
export const ObjectsLive = HttpApiBuilder.group(ControlPlaneApi, "objects", (handlers) =>
  Effect.gen(function* () {
    const access = yield* ObjectAccess
    return handlers
      .handle("list", ({ urlParams }) =>
        Effect.map(access.list(urlParams), ({ body, link }) =>
          link === undefined ? body : HttpServerResponse.unsafeJson(body, { headers: { link } })
        )
      )
      .handle("get", ({ request }) =>
        Effect.map(access.read(request.url), (found) =>
          HttpServerResponse.stream(found.body, {
            contentType: "application/octet-stream",
            contentLength: found.size,
            headers: found.headers
          })
        )
      )
      .handle("head", ({ request }) =>
        Effect.map(access.head(request.url), (headers) => HttpServerResponse.empty({ status: 200, headers }))
      )
      .handle("put", ({ headers, request }) =>
        Effect.map(access.write(bearerToken(headers.authorization), request.url, request.stream, headers), (written) =>
          HttpServerResponse.unsafeJson(written.body, { status: written.status, headers: written.headers })
        )
      )
      .handle("delete", ({ headers, request }) => access.delete(bearerToken(headers.authorization), request.url))
  })
)
