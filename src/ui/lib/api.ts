import { FetchHttpClient, HttpApiSchema, HttpClient, HttpClientRequest } from "@effect/platform"
import { Cause, Effect, Exit, Option, type Schema } from "effect"
import {
  controlPlaneClient,
  groundTruthClient,
  marketplaceClient,
  productClient,
  vaultClient
} from "../../contracts/Clients.js"
import { type CredentialKind, credential } from "./session.js"

/** An answer the page shows as it is: a refusal's status, code and detail, or why the call did not get one. */
export interface Refusal {
  readonly status: number | undefined
  readonly code: string
  readonly detail: string
}

/** A call's outcome: its value, or the refusal to show ("this token cannot read this" for a 401). */
export type Outcome<A> = { readonly ok: true; readonly value: A } | { readonly ok: false; readonly refusal: Refusal }

const origin = () => window.location.origin

const withBearer = (kind: CredentialKind | undefined) => (client: HttpClient.HttpClient) => {
  const token = kind === undefined ? undefined : credential(kind)
  return token === undefined ? client : HttpClient.mapRequest(client, HttpClientRequest.bearerToken(token))
}

/** The HTTP status the contract declares for a typed error (its class is its schema). */
const statusOf = (failure: object): number | undefined => {
  try {
    return HttpApiSchema.getStatusError(failure.constructor as unknown as Schema.Schema.All)
  } catch {
    return undefined
  }
}

const refusalOf = (cause: Cause.Cause<unknown>): Refusal => {
  const failure = Option.getOrUndefined(Cause.failureOption(cause)) as
    | {
        readonly code?: string
        readonly detail?: string
        readonly status?: number
        readonly _tag?: string
        readonly message?: string
      }
    | undefined
  if (failure?.code !== undefined) {
    // The wire status is the contract's for the error's class (a problem body's `status` is not kept on the error).
    const status = failure.status ?? statusOf(failure)
    const unauthorized = status === 401 || status === 403
    return {
      status,
      code: failure.code,
      detail: unauthorized ? `this token cannot read this (${failure.detail ?? failure.code})` : (failure.detail ?? "")
    }
  }
  const response = (failure as { response?: { status?: number } } | undefined)?.response
  return {
    status: response?.status,
    code: failure?._tag ?? "ERROR",
    detail: failure?.message ?? Cause.pretty(cause).split("\n")[0] ?? "the request failed"
  }
}

/** Runs one typed-client call against this origin with the page's credential. */
const run = <C, A>(
  make: (options: {
    baseUrl: string
    transformClient: (c: HttpClient.HttpClient) => HttpClient.HttpClient
  }) => Effect.Effect<C, never, HttpClient.HttpClient>,
  kind: CredentialKind | undefined,
  call: (client: C) => Effect.Effect<A, unknown>
): Promise<Outcome<A>> =>
  Effect.runPromiseExit(
    Effect.flatMap(make({ baseUrl: origin(), transformClient: withBearer(kind) }), call).pipe(
      Effect.provide(FetchHttpClient.layer)
    )
  ).then((exit) =>
    Exit.isSuccess(exit) ? { ok: true, value: exit.value } : { ok: false, refusal: refusalOf(exit.cause) }
  )

type Make<C> = (options: {
  baseUrl: string
  transformClient: (c: HttpClient.HttpClient) => HttpClient.HttpClient
}) => Effect.Effect<C, never, HttpClient.HttpClient>

type ClientOf<F> = F extends (...args: never) => Effect.Effect<infer C, never, HttpClient.HttpClient> ? C : never

export type Marketplace = ClientOf<typeof marketplaceClient>
export type Product = ClientOf<typeof productClient>
export type GroundTruth = ClientOf<typeof groundTruthClient>
export type ControlPlane = ClientOf<typeof controlPlaneClient>
export type Vault = ClientOf<typeof vaultClient>

/** The typed clients of each surface, each call with the credential its page uses (docs/dashboard.md). */
export const api = {
  market: <A>(call: (client: Marketplace) => Effect.Effect<A, unknown>, kind?: CredentialKind) =>
    run(marketplaceClient as Make<Marketplace>, kind, call),
  product: <A>(call: (client: Product) => Effect.Effect<A, unknown>, kind: CredentialKind | undefined = "admin") =>
    run(productClient as Make<Product>, kind, call),
  groundTruth: <A>(call: (client: GroundTruth) => Effect.Effect<A, unknown>) =>
    run(groundTruthClient as Make<GroundTruth>, undefined, call),
  controlPlane: <A>(call: (client: ControlPlane) => Effect.Effect<A, unknown>) =>
    run(controlPlaneClient as Make<ControlPlane>, "vault", call),
  vault: <A>(call: (client: Vault) => Effect.Effect<A, unknown>) => run(vaultClient as Make<Vault>, undefined, call)
}
