/**
 * `keel/clients`: the typed clients of every Keel HTTP surface, and nothing else. This module and what it imports
 * are runtime-free (contracts only: no SQLite, git, `node:*` or service code), so a browser dashboard can bundle it;
 * test/contracts/closure.test.ts holds that true.
 */
import { type HttpApi, HttpApiClient, HttpClient, HttpClientResponse } from "@effect/platform"
import { Effect } from "effect"
import { ControlPlaneApi } from "./controlplane/Api.js"
import { GroundTruthApi } from "./groundtruth/Api.js"
import { MarketplaceApi } from "./market/Api.js"
import { ProductApi } from "./product/Api.js"
import { PROBLEM_CONTENT_TYPE } from "./shared/Problem.js"
import { DECODE_ERROR_TAG, errorClasses } from "./shared/ProblemContract.js"
import { VaultApi } from "./vault/Api.js"

/**
 * A typed client's HttpClient that reads problem bodies: `_tag` is put back from `code` (the server leaves
 * it out), and a `VALIDATION_FAILED` body becomes the platform's decode error, so an error answer decodes
 * into the class the contract declares instead of failing to decode.
 */
export const problemAwareClient =
  (api: HttpApi.HttpApi.Any) =>
  (client: HttpClient.HttpClient): HttpClient.HttpClient => {
    const tagOf = new Map(errorClasses(api).flatMap((error) => error.codes.map((code) => [code, error.tag] as const)))
    return HttpClient.transformResponse(client, (response) =>
      Effect.flatMap(response, (answer) => {
        const contentType = answer.headers["content-type"] ?? ""
        if (answer.status < 400 || !contentType.startsWith(PROBLEM_CONTENT_TYPE)) return Effect.succeed(answer)
        return answer.json.pipe(
          Effect.map((body) => {
            const problem = body as Record<string, unknown>
            const code = String(problem.code)
            const tagged =
              code === "VALIDATION_FAILED"
                ? {
                    _tag: DECODE_ERROR_TAG,
                    message: problem.detail,
                    issues: (Array.isArray(problem.errors) ? problem.errors : []).map(
                      (error: { path: string; message: string }) => ({
                        _tag: "Type",
                        path: error.path === "" ? [] : error.path.split("."),
                        message: error.message
                      })
                    )
                  }
                : { ...problem, _tag: tagOf.get(code) ?? code }
            return HttpClientResponse.fromWeb(
              answer.request,
              new Response(JSON.stringify(tagged), {
                status: answer.status,
                headers: { ...answer.headers, "content-type": "application/json" }
              })
            )
          }),
          Effect.orElseSucceed(() => answer)
        )
      })
    )
  }

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
 * answer fails with the class its `code` names (the wire body has no `_tag`: see problemAwareClient).
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
