import * as fs from "node:fs"
import * as http from "node:http"
import { HttpClientRequest } from "@effect/platform"
import { Effect, FiberSet, Schema } from "effect"
import { problemType, statusTitle } from "../../../../contracts/shared/Problem.js"
import { FleetConfig } from "../../shared/FleetConfig.js"
import { answerOf, execute, fetchWithin, requestTo, routeOf, thrownBy } from "../../shared/objects/ControlPlaneHttp.js"
import { configuredAccess } from "../../shared/objects/ObjectApiClient.js"
import { FleetRegistry } from "../../shared/registry/Registry.js"
import { runnerLayout } from "../../shared/runners/RunnerLayout.js"
import { commandAllowed, makeNonceBook, verifyRequest } from "./GatewaySignature.js"

/** The gateway cannot start: no runner declared for the host, no signing secret, no way to the control plane. */
export class GatewayUnavailable extends Schema.TaggedError<GatewayUnavailable>()("GatewayUnavailable", {
  code: Schema.Literal("GATEWAY_UNAVAILABLE"),
  detail: Schema.String
}) {}

/** A request body the gateway reads at most (a job submission is small). */
const MAX_BODY = 64 * 1024

/** The kind of every job a pre-check job submits: the control plane's queue shows where it came from. */
export const PRECHECK_JOB_KIND = "precheck"

const SubmitRequest = Schema.Struct({
  target: Schema.String.pipe(Schema.minLength(1)),
  argv: Schema.Array(Schema.String).pipe(Schema.minItems(1), Schema.maxItems(64)),
  idempotency_key: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)))
})

interface Answer {
  readonly status: number
  readonly body: unknown
  readonly problem?: boolean
}

const problem = (status: number, code: string, detail: string): Answer => ({
  status,
  problem: true,
  body: { type: problemType(code), title: statusTitle(status), status, detail, code }
})

/**
 * `ctl host gateway` (docs/runners.md, "The gateway"): the pre-check runner's one reachable private destination, a
 * loopback-only HTTP endpoint through which jobs submit fleet jobs and read them. Every request is signed with the
 * request-signing secret (GatewaySignature); a submission must name a command the registry's `gateway_jobs` lists;
 * the gateway forwards it to the control plane's jobs API with its own vault token (`job-submit`), so no job ever
 * holds a fleet credential.
 */
export class RunnerGateway extends Effect.Service<RunnerGateway>()("fleet/RunnerGateway", {
  effect: Effect.gen(function* () {
    const registry = yield* FleetRegistry
    const fleet = yield* FleetConfig

    const serve = (targetName: string, options: { readonly port?: number } = {}) =>
      Effect.gen(function* () {
        const unavailable = (detail: string) => new GatewayUnavailable({ code: "GATEWAY_UNAVAILABLE", detail })
        const snapshot = yield* registry.read({ allowCached: true }).pipe(Effect.mapError((e) => unavailable(e.detail)))
        const target = snapshot.registry.targets.find((t) => t.name === targetName)
        const runner = target?.precheck_runner
        if (target === undefined || runner === undefined)
          return yield* unavailable(`${targetName} declares no precheck_runner`)
        const layout = runnerLayout(target, runner)
        // The secret is read per request: a reinstall's new secret holds at once.
        const secret = () => fs.readFileSync(layout.signingSecretFile, "utf8")
        yield* Effect.try({ try: secret, catch: () => unavailable(`${layout.signingSecretFile} cannot be read`) })
        let access = yield* configuredAccess(["KEEL_GATEWAY_GRANT_FILE", "KEEL_GRANT_FILE"], {
          needs: "job-submit"
        }).pipe(
          Effect.mapError((e) => unavailable(e.detail)),
          Effect.provideService(FleetConfig, fleet)
        )
        const nonces = makeNonceBook()

        /**
         * One call to the control plane's jobs API (its declared routes: the gateway relays the control plane's
         * answer as it came, validation refusals included, so it sends the job's request as given rather than
         * through the typed client, which checks a payload before sending); a token that expired is exchanged
         * again, once.
         */
        const forward = (
          request: (base: URL, token: string) => HttpClientRequest.HttpClientRequest
        ): Effect.Effect<Answer> =>
          Effect.gen(function* () {
            for (let attempt = 1; ; attempt++) {
              const answer = yield* execute(request(new URL(access.controlPlaneUrl), access.token)).pipe(
                Effect.flatMap(answerOf),
                Effect.catchTag("ResponseError", (error) => answerOf(error.response)),
                Effect.map((relayed): Answer => ({ ...relayed, problem: relayed.status >= 400 })),
                Effect.catchTags({
                  RequestError: (error) =>
                    Effect.succeed<Answer>(
                      problem(502, "GATEWAY_UPSTREAM_UNAVAILABLE", `the control plane: ${thrownBy(error).message}`)
                    )
                }),
                Effect.provide(fetchWithin(30_000))
              )
              // A transport failure is a 502 of the gateway's own, never this.
              if (answer.status === 401 && attempt === 1) {
                const renewed = yield* Effect.either(
                  configuredAccess(["KEEL_GATEWAY_GRANT_FILE", "KEEL_GRANT_FILE"])
                ).pipe(Effect.provideService(FleetConfig, fleet))
                if (renewed._tag === "Right") {
                  access = renewed.right
                  continue
                }
              }
              return answer
            }
          })

        const handle = (
          method: string,
          url: string,
          body: Uint8Array,
          headers: http.IncomingHttpHeaders
        ): Effect.Effect<Answer> =>
          Effect.gen(function* () {
            const verdict = verifyRequest(
              secret(),
              layout.agentId,
              headers,
              { method, path: url, body },
              Math.floor(Date.now() / 1000),
              nonces
            )
            if (!verdict.ok) return problem(401, verdict.code, verdict.detail)
            const pathname = url.split("?")[0] ?? ""
            if (method === "POST" && pathname === "/v1/jobs") {
              let request: typeof SubmitRequest.Type
              try {
                request = Schema.decodeUnknownSync(SubmitRequest)(JSON.parse(new TextDecoder().decode(body)))
              } catch {
                return problem(400, "GATEWAY_BAD_REQUEST", "a submission is JSON {target, argv[], idempotency_key?}")
              }
              if (!commandAllowed(runner.gateway_jobs, request.target, request.argv))
                return problem(
                  403,
                  "GATEWAY_COMMAND_REFUSED",
                  `${request.target}: that command is not one the registry's gateway_jobs lets pre-check jobs submit`
                )
              const submission = {
                kind: PRECHECK_JOB_KIND,
                target: request.target,
                argv: request.argv,
                ...(request.idempotency_key === undefined ? {} : { idempotency_key: request.idempotency_key })
              }
              return yield* forward((base, token) =>
                requestTo(base, routeOf("jobs", "submit"), { token }).pipe(HttpClientRequest.bodyUnsafeJson(submission))
              )
            }
            const job = /^\/v1\/jobs\/([A-Za-z0-9_-]{1,100})$/.exec(pathname)
            if (method === "GET" && job !== null) {
              const query = new URLSearchParams(url.split("?")[1] ?? "")
              const params = new URLSearchParams()
              for (const name of ["cursor", "limit"]) {
                const value = query.get(name)
                if (value !== null) params.set(name, value)
              }
              const answer = yield* forward((base, token) =>
                requestTo(base, routeOf("jobs", "job"), { token, params: { id: job[1]! }, query: params })
              )
              // Jobs read only what jobs submitted: any other job of the fleet is not theirs to see.
              const kind = (answer.body as { job?: { kind?: string } } | undefined)?.job?.kind
              if (answer.status === 200 && kind !== PRECHECK_JOB_KIND)
                return problem(404, "JOB_NOT_FOUND", `no pre-check job ${job[1]}`)
              return answer
            }
            return problem(404, "NOT_FOUND", "the gateway answers POST /v1/jobs and GET /v1/jobs/<id>")
          })

        // Requests run as fibers of the gateway's scope: closing the gateway interrupts any still in flight.
        const runRequest = yield* FiberSet.makeRuntimePromise()
        const server = http.createServer((request, response) => {
          const chunks: Array<Buffer> = []
          let size = 0
          let refused = false
          const reply = (answer: Answer) => {
            if (response.headersSent) return
            response.writeHead(answer.status, {
              "content-type": answer.problem ? "application/problem+json" : "application/json"
            })
            response.end(JSON.stringify(answer.body))
          }
          request.on("data", (chunk: Buffer) => {
            size += chunk.length
            if (size > MAX_BODY && !refused) {
              refused = true
              reply(problem(413, "PAYLOAD_TOO_LARGE", `a request body is at most ${MAX_BODY} bytes`))
              request.destroy()
            } else if (!refused) chunks.push(chunk)
          })
          request.on("end", () => {
            if (refused) return
            runRequest(
              handle(request.method ?? "GET", request.url ?? "/", Buffer.concat(chunks), request.headers)
            ).then(reply, (error: unknown) =>
              reply(problem(500, "INTERNAL_ERROR", `the gateway failed: ${String(error)}`))
            )
          })
        })
        const port = options.port ?? runner.gateway_port
        yield* Effect.acquireRelease(
          Effect.async<void, GatewayUnavailable>((resume) => {
            server.once("error", (error) => resume(Effect.fail(unavailable(`127.0.0.1:${port}: ${error.message}`))))
            server.listen(port, "127.0.0.1", () => resume(Effect.void))
          }),
          () =>
            Effect.promise(
              () =>
                new Promise<void>((resolve) => {
                  server.close(() => resolve())
                  server.closeAllConnections()
                })
            )
        )
        const address = server.address()
        return {
          url: `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : port}`,
          agentId: layout.agentId
        }
      })

    return { serve } as const
  })
}) {}
