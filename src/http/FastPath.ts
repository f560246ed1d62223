import { HttpApiSchema, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { type Effect, Option, Schema } from "effect"

/**
 * A hot route's common case answered before the router; anything else goes on to `app`, untouched.
 * Composed by `src/layers/Http.ts` inside the body guard (docs/performance.md, "Fast paths").
 */
export type FastPath = <E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest>

/** Fast paths one after another: the first that takes a request answers it. */
export const composeFastPaths = (...paths: ReadonlyArray<FastPath>): FastPath =>
  paths.reduceRight<FastPath>(
    (next, path) => (app) => path(next(app)),
    (app) => app
  )

type Fields = Schema.Schema<Record<string, unknown>, unknown>

/** What a fast path reads of an `HttpApiEndpoint`'s definition. */
interface EndpointSchemas {
  readonly payloadSchema: Option.Option<unknown>
  readonly headersSchema: Option.Option<unknown>
  readonly urlParamsSchema: Option.Option<unknown>
  readonly successSchema: unknown
}

const decoder = (schema: Option.Option<unknown>) =>
  Option.map(schema, (s) => Schema.decodeUnknownEither(s as Fields)).pipe(Option.getOrUndefined)

/**
 * An endpoint's own schemas, compiled once: what its `HttpApi` route decodes and encodes for every request, so
 * a fast path accepts exactly what the route accepts and answers what the route would.
 */
export const endpointSchemas = (group: unknown, name: string) => {
  const endpoint = (group as { readonly endpoints: Record<string, EndpointSchemas> }).endpoints[name]
  if (endpoint === undefined) throw new Error(`no endpoint ${name}`)
  return {
    decodePayload: decoder(endpoint.payloadSchema),
    decodeHeaders: decoder(endpoint.headersSchema),
    decodeUrlParams: decoder(endpoint.urlParamsSchema),
    encodeSuccess: Schema.encodeSync(endpoint.successSchema as Schema.Schema<unknown, unknown>)
  }
}

/** A typed error as an `HttpApi` route answers it: its class's status, its encoded fields as JSON. */
export const errorResponse = (error: { readonly constructor: unknown }, headers: Record<string, string> = {}) => {
  const schema = error.constructor as Schema.Schema<unknown, unknown>
  return HttpServerResponse.unsafeJson(Schema.encodeSync(schema)(error), {
    status: HttpApiSchema.getStatusError(schema),
    headers
  })
}

/** Characters that every query-string parser reads the same way (RFC 3986 unreserved). */
const PLAIN = /^[A-Za-z0-9._~-]+$/

/**
 * A query string of distinct `name=value` pairs in plain characters, or undefined for anything a parser could
 * read differently (percent escapes, `+`, repeated names): the fast path leaves those to the router's parser.
 */
export const plainQuery = (query: string): Record<string, string> | undefined => {
  const out: Record<string, string> = {}
  for (const pair of query.split("&")) {
    const eq = pair.indexOf("=")
    if (eq <= 0) return undefined
    const name = pair.slice(0, eq)
    const value = pair.slice(eq + 1)
    if (!PLAIN.test(name) || !PLAIN.test(value) || Object.hasOwn(out, name)) return undefined
    out[name] = value
  }
  return out
}
