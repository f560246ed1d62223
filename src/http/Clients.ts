import { HttpApiClient, type HttpClient } from "@effect/platform"
import type { Effect } from "effect"
import { ControlPlaneApi } from "./controlplane/Api.js"
import { GroundTruthApi } from "./groundtruth/Api.js"
import { MarketplaceApi } from "./marketplace/Api.js"
import { ProductApi } from "./product/Api.js"

type ClientOptions = {
  readonly baseUrl?: string
  readonly transformClient?: (client: HttpClient.HttpClient) => HttpClient.HttpClient
}

const opts = (options: ClientOptions) => ({
  ...(options.baseUrl === undefined ? {} : { baseUrl: options.baseUrl }),
  ...(options.transformClient === undefined ? {} : { transformClient: options.transformClient })
})

/** Typed clients, derived from the same contracts the server implements. They need an HttpClient. */
export const marketplaceClient = (options: ClientOptions = {}) => HttpApiClient.make(MarketplaceApi, opts(options))
export const groundTruthClient = (options: ClientOptions = {}) => HttpApiClient.make(GroundTruthApi, opts(options))
export const productClient = (options: ClientOptions = {}) => HttpApiClient.make(ProductApi, opts(options))
export const controlPlaneClient = (options: ClientOptions = {}) => HttpApiClient.make(ControlPlaneApi, opts(options))

export type GroundTruthClient = Effect.Effect.Success<ReturnType<typeof groundTruthClient>>
export type ProductClient = Effect.Effect.Success<ReturnType<typeof productClient>>
