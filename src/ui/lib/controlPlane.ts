import { FetchHttpClient, HttpClient, HttpClientRequest, HttpClientResponse } from "@effect/platform"
import { Cause, Effect, Exit, Option } from "effect"
import { controlPlaneClient } from "../../contracts/Clients.js"
import type { ControlPlane, Refusal } from "./api.js"
import { credential } from "./session.js"

/**
 * Control-plane calls for the Fleet page and the Handoff sheet: the typed client (`keel/clients`) with the tab's
 * vault token, plus what the typed decode alone loses — the HTTP status and the raw bytes of the answer, read off
 * the response before the client decodes it (then handed on as a fresh response with the same bytes).
 * The Handoff sheet must keep them after errors (seed 002, handoff rule 4); the Fleet page uses the status to say
 * "this token cannot read this" for a 401 or 403 (a decoded error class carries its code, not its status).
 */

/** What came back over the wire, whatever the decode made of it (undefined: no answer at all). */
export interface WireAnswer {
  readonly status: number | undefined
  readonly raw: string | undefined
}

export type Read<A> =
  | { readonly ok: true; readonly value: A; readonly wire: WireAnswer }
  | { readonly ok: false; readonly refusal: Refusal; readonly wire: WireAnswer }

export const TOKEN_CANNOT_READ = "this token cannot read this"

const refusalOf = (cause: Cause.Cause<unknown>, wire: WireAnswer): Refusal => {
  const failure = Option.getOrUndefined(Cause.failureOption(cause)) as
    | { readonly code?: string; readonly detail?: string; readonly _tag?: string; readonly message?: string }
    | undefined
  const status = wire.status
  const code = failure?.code ?? failure?._tag ?? "ERROR"
  const detail =
    failure?.detail ?? failure?.message ?? Cause.pretty(cause).split("\n")[0] ?? "the request got no answer"
  if (status === 401 || status === 403) return { status, code, detail: `${TOKEN_CANNOT_READ} (${code}: ${detail})` }
  return { status, code, detail }
}

/**
 * One typed control-plane call with the tab's vault token (`urlParams`: query fields the contract does not declare
 * but the route reads, as the storage-root reconcile path's target, transaction and phase).
 */
export const callControlPlane = <A>(
  call: (client: ControlPlane) => Effect.Effect<A, unknown>,
  options: { readonly urlParams?: Readonly<Record<string, string>> } = {}
): Promise<Read<A>> => {
  const wire: { status: number | undefined; raw: string | undefined } = { status: undefined, raw: undefined }
  const token = credential("vault")
  const transformClient = (client: HttpClient.HttpClient) =>
    HttpClient.mapRequest(client, (request) => {
      const withToken = token === undefined ? request : HttpClientRequest.bearerToken(request, token)
      return options.urlParams === undefined ? withToken : HttpClientRequest.setUrlParams(withToken, options.urlParams)
    }).pipe(
      HttpClient.transformResponse((response) =>
        Effect.flatMap(response, (answer) =>
          // The bytes are read once here and handed on as a fresh response: the typed decode reads the body again.
          answer.arrayBuffer.pipe(
            Effect.map((bytes) => {
              wire.status = answer.status
              wire.raw = new TextDecoder().decode(bytes)
              return HttpClientResponse.fromWeb(
                answer.request,
                new Response(bytes, { status: answer.status, headers: answer.headers })
              )
            }),
            Effect.orElseSucceed(() => {
              wire.status = answer.status
              return answer
            })
          )
        )
      )
    )
  const make = controlPlaneClient as unknown as (options: {
    baseUrl: string
    transformClient: (client: HttpClient.HttpClient) => HttpClient.HttpClient
  }) => Effect.Effect<ControlPlane, never, HttpClient.HttpClient>
  return Effect.runPromiseExit(
    Effect.flatMap(make({ baseUrl: window.location.origin, transformClient }), call).pipe(
      Effect.provide(FetchHttpClient.layer)
    )
  ).then((exit) =>
    Exit.isSuccess(exit)
      ? { ok: true as const, value: exit.value, wire: { ...wire } }
      : { ok: false as const, refusal: refusalOf(exit.cause, wire), wire: { ...wire } }
  )
}
