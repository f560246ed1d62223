import { Effect, Schema } from "effect"
import { unreachable } from "../../platform/Net.js"
import { ObjectApiError, secureBase } from "../objects/ObjectApiClient.js"

const RunningAnswer = Schema.Struct({ jobs: Schema.Array(Schema.Struct({ id: Schema.String })) })

const failure = (code: string, status: number, detail: string) => new ObjectApiError({ code, status, detail })

/**
 * The ids of the jobs running on `target`, as the control plane answers them (`GET /api/fleet/jobs?target=
 * &state=running`, a token whose grant holds `job-read` for the target). A refusal carries the control plane's
 * `code` and `status`; a transport failure is `CONTROL_PLANE_UNREACHABLE` (status 0).
 */
export const runningJobsOn = (access: { readonly controlPlaneUrl: string; readonly token: string }, target: string) =>
  Effect.gen(function* () {
    const base = yield* secureBase("KEEL_CONTROL_PLANE_URL", access.controlPlaneUrl)
    const url = new URL(`/api/fleet/jobs?${new URLSearchParams({ target, state: "running" })}`, base)
    const answer = yield* Effect.tryPromise({
      try: async (signal) => {
        const response = await fetch(url, {
          headers: { authorization: `Bearer ${access.token}` },
          signal: AbortSignal.any([signal, AbortSignal.timeout(15_000)])
        })
        return { status: response.status, text: await response.text() }
      },
      catch: (error) => failure("CONTROL_PLANE_UNREACHABLE", 0, unreachable(base, error))
    })
    let body: unknown
    try {
      body = JSON.parse(answer.text)
    } catch {
      return yield* failure(
        `HTTP_${answer.status}`,
        answer.status,
        `the control plane answered ${answer.status}, not JSON`
      )
    }
    if (answer.status !== 200) {
      const problem = body as { code?: unknown; detail?: unknown }
      return yield* failure(
        typeof problem.code === "string" ? problem.code : `HTTP_${answer.status}`,
        answer.status,
        typeof problem.detail === "string" ? problem.detail : `the control plane answered ${answer.status}`
      )
    }
    const decoded = yield* Schema.decodeUnknown(RunningAnswer)(body).pipe(
      Effect.mapError(() => failure("CONTROL_PLANE_ANSWER_INVALID", 200, "the control plane's job list is not one"))
    )
    return decoded.jobs.map((job) => job.id)
  })
