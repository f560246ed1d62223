import { FetchHttpClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect, Option } from "effect"
import { controlPlaneClient } from "../../contracts/Clients.js"
import { codeFromTag } from "../../contracts/shared/Problem.js"
import { configuredAccess } from "../../services/fleet/shared/objects/ObjectApiClient.js"
import { AppConfig } from "../../services/platform/AppConfig.js"
import type { probeConfig, probeStatusConfig } from "../fleet.js"
import type { Parsed } from "../Lazy.js"
import { CommandFailed, ExitWith, emit } from "../Output.js"

/**
 * `ctl fleet …` are clients of the control plane over HTTP (as `nomad job run` is of Nomad's server): the
 * workflow runs in `ctl serve`, never in this process. The server is KEEL_CONTROL_PLANE_URL (default the
 * local server, http://127.0.0.1:KEEL_HTTP_PORT); the credential is the grant file KEEL_GRANT_FILE, exchanged
 * at the vault (KEEL_VAULT_URL, default the control plane) for a short-lived token.
 */
/** The control plane's URL and a short-lived token exchanged for the grant in KEEL_GRANT_FILE. */
export const controlPlaneAccess = (needs: string) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const access = yield* configuredAccess(["KEEL_GRANT_FILE"], {
      defaultUrl: `http://127.0.0.1:${config.httpPort}`,
      needs
    }).pipe(Effect.mapError(refused))
    return { url: access.controlPlaneUrl, token: access.token }
  })

export const controlPlane = Effect.gen(function* () {
  const { token, url } = yield* controlPlaneAccess("fleet-read")
  return yield* controlPlaneClient({
    baseUrl: url,
    transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(token))
  })
}).pipe(Effect.provide(FetchHttpClient.layer))

/** A refusal of the control plane as one line (its code and detail), or a transport failure. */
export const refused = (error: unknown) => {
  const e = error as { code?: string; detail?: string; message?: string; _tag?: string }
  return e.code !== undefined
    ? new CommandFailed({ code: e.code, detail: `${e.code}: ${e.detail ?? ""}` })
    : new CommandFailed({
        code: e._tag === undefined || e._tag === "RequestError" ? "CONTROL_PLANE_UNREACHABLE" : codeFromTag(e._tag),
        detail: `the control plane: ${e.message ?? e._tag ?? "failed"}`
      })
}

export const probe = ({ host, pauseMs, requestId, json }: Parsed<typeof probeConfig>) =>
  Effect.gen(function* () {
    const client = yield* controlPlane
    const started = yield* client.workflows
      .startProbe({
        payload: {
          host,
          pause_ms: pauseMs,
          ...(Option.isSome(requestId) ? { request_id: requestId.value } : {})
        }
      })
      .pipe(Effect.mapError(refused))
    yield* emit(json, started, (s) => `started FleetProbe ${s.execution_id} of ${s.host}`)
  })

export const probeStatus = ({ executionId, json }: Parsed<typeof probeStatusConfig>) =>
  Effect.gen(function* () {
    const client = yield* controlPlane
    const status = yield* client.workflows
      .probeStatus({ path: { execution_id: executionId } })
      .pipe(Effect.mapError(refused))
    yield* emit(json, status, (s) =>
      s.state === "succeeded" && s.result !== null
        ? `${s.execution_id} succeeded: ${s.result.host} runs ${s.result.kernel} (report ${s.result.report_key})`
        : s.state === "failed" && s.error !== null
          ? `${s.execution_id} failed at ${s.error.step}: ${s.error.detail}`
          : `${s.execution_id} is running`
    )
    if (status.state === "failed") return yield* new ExitWith({ code: 1 })
  })
