import { FetchHttpClient, type HttpClientError } from "@effect/platform"
import { Effect } from "effect"
import { unreachable } from "../../../platform/Net.js"
import { controlPlaneAt, fetchWithin, refusalOf, thrownBy } from "../objects/ControlPlaneHttp.js"
import { ObjectApiError, secureBase } from "../objects/ObjectApiClient.js"

const failure = (code: string, status: number, detail: string) => new ObjectApiError({ code, status, detail })

/**
 * The ids of the jobs running on `target`, as the control plane answers them (`GET /api/fleet/jobs?target=
 * &state=running` through its typed client, a token whose grant holds `job-read` for the target). A refusal carries
 * the control plane's `code` and `status`; a transport failure is `CONTROL_PLANE_UNREACHABLE` (status 0).
 */
export const runningJobsOn = (access: { readonly controlPlaneUrl: string; readonly token: string }, target: string) =>
  Effect.gen(function* () {
    const base = yield* secureBase("KEEL_CONTROL_PLANE_URL", access.controlPlaneUrl)
    const client = yield* controlPlaneAt(base.origin, access.token)
    const answer = yield* client.jobs.live({ urlParams: { target, state: "running" } }).pipe(
      Effect.catchAll((error): Effect.Effect<never, ObjectApiError> => {
        const tag = (error as { _tag?: string })._tag
        if (tag === "RequestError")
          return Effect.fail(
            failure("CONTROL_PLANE_UNREACHABLE", 0, unreachable(base, thrownBy(error as HttpClientError.RequestError)))
          )
        if (tag !== "ResponseError")
          return Effect.fail(failure("CONTROL_PLANE_ANSWER_INVALID", 200, "the control plane's job list is not one"))
        return Effect.flatMap(refusalOf((error as HttpClientError.ResponseError).response), ({ body, json, status }) =>
          Effect.fail(
            json === undefined
              ? failure(`HTTP_${status}`, status, `the control plane answered ${status}, not JSON`)
              : failure(
                  typeof body.code === "string" ? body.code : `HTTP_${status}`,
                  status,
                  typeof body.detail === "string" ? body.detail : `the control plane answered ${status}`
                )
          )
        )
      }),
      Effect.provide(fetchWithin(15_000))
    )
    return answer.jobs.map((job) => job.id)
  }).pipe(Effect.provide(FetchHttpClient.layer))
