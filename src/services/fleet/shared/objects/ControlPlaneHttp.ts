import { FetchHttpClient, HttpClient, HttpClientError, HttpClientRequest, HttpClientResponse } from "@effect/platform"
import { Effect, Layer } from "effect"
import { controlPlaneClient, vaultClient } from "../../../../contracts/Clients.js"
import { ControlPlaneApi } from "../../../../contracts/controlplane/Api.js"

/**
 * How fleet services and commands reach Keel's own HTTP surfaces (the control plane, the vault): the typed clients
 * of `src/clients.ts` over `fetch`, as the hand-written calls they replace sent them.
 *
 * Two choices keep the wire and what callers report as they were:
 * - Every error answer fails as a `StatusCode` ResponseError whose body is still readable (`refusalOf`). These
 *   callers report or relay the control plane's problem verbatim — its `code`, `detail` and extra members, including
 *   codes no contract declares (`NOT_FOUND`, `INTERNAL_ERROR`, a proxy's page) — so the answer is not decoded into
 *   the contract's classes first (which would drop what they do not declare).
 * - `fetch` is bounded the way the calls were (`AbortSignal.timeout`), so a timeout is the same TimeoutError.
 */

/** Every error answer (status 400 and up) fails as a StatusCode ResponseError carrying the whole answer. */
export const rawRefusals = (client: HttpClient.HttpClient): HttpClient.HttpClient =>
  HttpClient.transformResponse(client, (response) =>
    Effect.flatMap(response, (answer) =>
      answer.status < 400
        ? Effect.succeed(answer)
        : Effect.flatMap(answer.arrayBuffer, (bytes) =>
            Effect.fail(
              new HttpClientError.ResponseError({
                request: answer.request,
                reason: "StatusCode",
                // The body was read here: a fresh answer with the same bytes, so the caller can read it again.
                response: HttpClientResponse.fromWeb(
                  answer.request,
                  new Response(bytes, { status: answer.status, headers: answer.headers })
                )
              })
            )
          )
    )
  )

/** A refusal as the wire carried it: its status, its text, and its body as JSON (`{}` when it is not JSON). */
export const refusalOf = (response: HttpClientResponse.HttpClientResponse) =>
  Effect.map(
    Effect.orElseSucceed(response.text, () => ""),
    (text) => {
      let json: unknown
      try {
        json = JSON.parse(text)
      } catch {}
      const body = (typeof json === "object" && json !== null ? json : {}) as {
        readonly code?: unknown
        readonly detail?: unknown
        readonly [member: string]: unknown
      }
      return { status: response.status, text, json, body }
    }
  )

/** What a transport failure threw (fetch's own error: its message, its cause, a TimeoutError). */
export const thrownBy = (error: HttpClientError.RequestError): Error =>
  error.cause instanceof Error ? error.cause : new Error(error.message)

/** `fetch`, each call bounded by `millis` as `AbortSignal.timeout(millis)` bounds it (answer and body). */
export const fetchWithin = (millis: number) =>
  Layer.merge(
    FetchHttpClient.layer,
    Layer.succeed(FetchHttpClient.Fetch, ((input: Parameters<typeof globalThis.fetch>[0], init?: RequestInit) =>
      globalThis.fetch(input, {
        ...init,
        signal:
          init?.signal == null
            ? AbortSignal.timeout(millis)
            : AbortSignal.any([init.signal, AbortSignal.timeout(millis)])
      })) as typeof globalThis.fetch)
  )

/** No span and no trace headers (`traceparent`, `b3`): the requests carry what the plain `fetch` calls carried. */
const untraced = (client: HttpClient.HttpClient) => HttpClient.withTracerDisabledWhen(client, () => true)

const bearer = (token: string | undefined) => (client: HttpClient.HttpClient) =>
  rawRefusals(
    untraced(token === undefined ? client : HttpClient.mapRequest(client, HttpClientRequest.bearerToken(token)))
  )

/**
 * The control plane's typed client at `baseUrl`, carrying `token`; refusals raw (see above). Needs an HttpClient.
 * `shape` adds to every request what the contract does not declare (the reconcile path's raw query).
 */
export const controlPlaneAt = (
  baseUrl: string,
  token: string,
  shape?: (request: HttpClientRequest.HttpClientRequest) => HttpClientRequest.HttpClientRequest
) =>
  controlPlaneClient({
    baseUrl,
    transformClient: (client) => bearer(token)(shape === undefined ? client : HttpClient.mapRequest(client, shape))
  })

/** The vault's typed client at `baseUrl` (a token only for item reads); refusals raw. Needs an HttpClient. */
export const vaultAt = (baseUrl: string, token?: string) => vaultClient({ baseUrl, transformClient: bearer(token) })

type Groups = typeof ControlPlaneApi.groups
/**
 * An endpoint's method and path as the contract declares them (`/api` included), for the few calls the typed
 * client cannot make: bodies streamed from or to a file, a body sent as the bytes read, and `/api/objects/*`
 * (HttpApiClient fills `:name` parameters only, never the `*` rest of a path).
 */
export const routeOf = <G extends keyof Groups>(group: G, endpoint: keyof Groups[G]["endpoints"]) => {
  const groups = ControlPlaneApi.groups as unknown as Record<
    string,
    { readonly endpoints: Record<string, { readonly path: string; readonly method: string }> }
  >
  const declared = groups[group as string]!.endpoints[endpoint as string]!
  return { method: declared.method, path: declared.path }
}

/**
 * A request for a declared route at `base` (its origin): `*` filled with the object key (each segment encoded),
 * `:name` parameters with `params` as given, then `query`.
 */
export const requestTo = (
  base: URL,
  route: { readonly method: string; readonly path: string },
  options: {
    readonly token: string
    readonly key?: string
    readonly params?: Readonly<Record<string, string>>
    readonly query?: URLSearchParams
  }
) => {
  let path =
    options.key === undefined
      ? route.path
      : route.path.replace("*", options.key.split("/").map(encodeURIComponent).join("/"))
  for (const [name, value] of Object.entries(options.params ?? {})) path = path.replace(`:${name}`, value)
  const query = options.query === undefined || options.query.size === 0 ? "" : `?${options.query}`
  return HttpClientRequest.make(route.method as "GET")(new URL(`${path}${query}`, base).toString()).pipe(
    HttpClientRequest.bearerToken(options.token)
  )
}

/** An answer as a relay or a report reads it: its status and its body (JSON, else its text). */
export const answerOf = (response: HttpClientResponse.HttpClientResponse) =>
  Effect.map(refusalOf(response), ({ json, status, text }) => ({ status, body: json === undefined ? text : json }))

/** Executes a request with the refusals raw: error answers fail as ResponseError (see above). */
export const execute = (request: HttpClientRequest.HttpClientRequest) =>
  Effect.flatMap(HttpClient.HttpClient, (client) => rawRefusals(untraced(client)).execute(request))
