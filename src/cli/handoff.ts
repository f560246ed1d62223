import { Args, Command, Options } from "@effect/cli"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Console, Effect } from "effect"
import { ReconcilePhases } from "../services/fleet/handoff/StorageReconcile.js"
import { controlPlaneAccess } from "./fleet.js"
import { CommandFailed, ExitWith, json } from "./Output.js"

interface Answer {
  readonly exit_code: number
  readonly refusal: string | null
  readonly report: {
    readonly state?: string
    readonly winner?: string | null
    readonly steps?: ReadonlyArray<{ readonly step: string; readonly at: string }>
    readonly detail?: string | null
  } | null
}

/** A run's steps, one per line, as far as they went (what a TTY shows instead of JSON). */
const stepView = (target: string, transaction: string, phase: string, answer: Answer) =>
  [
    `${target} ${transaction} ${phase}: ${answer.report?.state ?? "no report"}${answer.refusal ? ` — refused: ${answer.refusal}` : ""}${answer.report?.winner ? ` (winner ${answer.report.winner})` : ""}`,
    ...(answer.report?.steps ?? []).map((s) => `  ✓ ${s.step.padEnd(14)} ${s.at}`),
    ...(answer.report?.detail ? [`  ${answer.report.detail}`] : [])
  ].join("\n")

/**
 * `ctl host storage-root-reconcile TARGET --transaction ID --phase PHASE [--json]`: a client of the control plane
 * (GET for status, POST for the others; the grant in KEEL_GRANT_FILE holds storage-reconcile-read or -apply for
 * the target). Prints the answer and exits with the report's exit_code; a refusal by the control plane itself
 * (400, 401, 503) exits 1 with its code.
 */
export const storageRootReconcile = Command.make(
  "storage-root-reconcile",
  {
    target: Args.text({ name: "TARGET" }),
    transaction: Options.text("transaction").pipe(Options.withDescription("The handoff's transaction id")),
    phase: Options.choice("phase", ReconcilePhases).pipe(
      Options.withDescription("status (GET), or run, resume, rollback, finalize (POST)")
    ),
    json
  },
  ({ json, phase, target, transaction }) =>
    Effect.gen(function* () {
      const access = yield* controlPlaneAccess(
        phase === "status" ? "storage-reconcile-read" : "storage-reconcile-apply"
      )
      const query = new URLSearchParams({ target, transaction, phase }).toString()
      const request = (phase === "status" ? HttpClientRequest.get : HttpClientRequest.post)(
        `${access.url}/api/host/storage-root-reconcile?${query}`
      ).pipe(HttpClientRequest.bearerToken(access.token))
      const response = yield* (yield* HttpClient.HttpClient)
        .execute(request)
        .pipe(Effect.mapError((error) => new CommandFailed({ detail: `the control plane: ${error.message}` })))
      const body = (yield* response.json.pipe(
        Effect.mapError(
          () => new CommandFailed({ detail: `the control plane answered ${response.status} without JSON` })
        )
      )) as Answer & { code?: string; detail?: string }
      if (response.status !== 200) {
        if (json) yield* Console.log(JSON.stringify({ error: { code: body.code, detail: body.detail } }))
        return yield* new CommandFailed({ detail: `${body.code ?? response.status}: ${body.detail ?? ""}` })
      }
      yield* Console.log(json ? JSON.stringify(body, null, 2) : stepView(target, transaction, phase, body))
      if (body.exit_code !== 0) return yield* new ExitWith({ code: body.exit_code })
    }).pipe(Effect.scoped, Effect.provide(FetchHttpClient.layer))
).pipe(Command.withDescription("A storage-root handoff phase on a target, through the control plane"))
