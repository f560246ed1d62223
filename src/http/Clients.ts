import { HttpApiClient, type HttpClient } from "@effect/platform"
import type { Effect } from "effect"
import { MarketplaceApi } from "../contracts/market/Api.js"
import { ControlPlaneApi } from "./controlplane/Api.js"
import { GroundTruthApi } from "./groundtruth/Api.js"
import { problemAwareClient } from "./ProblemContract.js"
import { ProductApi } from "./product/Api.js"
import { VaultApi } from "./vault/Api.js"

type ClientOptions = {
  readonly baseUrl?: string
  readonly transformClient?: (client: HttpClient.HttpClient) => HttpClient.HttpClient
}

/** Problem bodies are read back into the contract's error classes before any transform of the caller's. */
const opts = (readProblems: (client: HttpClient.HttpClient) => HttpClient.HttpClient, options: ClientOptions) => {
  const transform = options.transformClient
  return {
    ...(options.baseUrl === undefined ? {} : { baseUrl: options.baseUrl }),
    transformClient: (client: HttpClient.HttpClient) =>
      readProblems(transform === undefined ? client : transform(client))
  }
}

/**
 * Typed clients, derived from the same contracts the server implements. They need an HttpClient. An error
 * answer fails with the class its `code` names (the wire body has no `_tag`: see ProblemContract).
 */
export const marketplaceClient = (options: ClientOptions = {}) =>
  HttpApiClient.make(MarketplaceApi, opts(problemAwareClient(MarketplaceApi), options))
export const groundTruthClient = (options: ClientOptions = {}) =>
  HttpApiClient.make(GroundTruthApi, opts(problemAwareClient(GroundTruthApi), options))
export const productClient = (options: ClientOptions = {}) =>
  HttpApiClient.make(ProductApi, opts(problemAwareClient(ProductApi), options))
export const controlPlaneClient = (options: ClientOptions = {}) =>
  HttpApiClient.make(ControlPlaneApi, opts(problemAwareClient(ControlPlaneApi), options))
export const vaultClient = (options: ClientOptions = {}) =>
  HttpApiClient.make(VaultApi, opts(problemAwareClient(VaultApi), options))

export type GroundTruthClient = Effect.Effect.Success<ReturnType<typeof groundTruthClient>>
export type ProductClient = Effect.Effect.Success<ReturnType<typeof productClient>>
