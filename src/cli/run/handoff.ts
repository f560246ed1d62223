import { FetchHttpClient, HttpClientRequest } from "@effect/platform"
import { Console, Effect } from "effect"
import { runRecordedPhase } from "../../actors/StorageHandoff.js"
import type { ReconcilePhase } from "../../contracts/fleet/Handoff.js"
import { HandoffHereLive, HandoffWorkerLive } from "../../layers/Handoff.js"
import { claimWorker, releaseWorker } from "../../services/fleet/agent/handoff/HandoffEngine.js"
import { handoffDir } from "../../services/fleet/agent/handoff/HandoffFiles.js"
import { HandoffHere } from "../../services/fleet/agent/handoff/HandoffHere.js"
import { controlPlaneAt, refusalOf } from "../../services/fleet/shared/objects/ControlPlaneHttp.js"
import { AppConfig } from "../../services/platform/AppConfig.js"
import type { storageRootReconcileConfig } from "../handoff.js"
import type { Parsed } from "../Lazy.js"
import { CommandFailed, ExitWith, failWith } from "../Output.js"
import { controlPlaneAccess, refused } from "./fleet.js"

/**
 * `--here --worker`: the detached worker a phase started on this host. It runs the phase the receipt records (Run
 * or Rollback, at its attempt) to its end on the host's own engine, then exits; a second worker for the same
 * transaction leaves at once.
 */
const worker = (target: string, transaction: string) =>
  Effect.gen(function* () {
    const dir = handoffDir((yield* AppConfig).dataDir, transaction)
    if (!claimWorker(dir)) return yield* Console.log(`${transaction}: a worker is on it already`)
    yield* Effect.gen(function* () {
      const receipt = yield* runRecordedPhase((yield* AppConfig).dataDir, target, transaction)
      yield* Console.log(
        `${new Date().toISOString()} ${transaction}: ${receipt?.phase ?? "-"} ${receipt?.state ?? "no receipt"}`
      )
    }).pipe(Effect.ensuring(Effect.sync(() => releaseWorker(dir))), Effect.provide(HandoffWorkerLive))
  })

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

/** Prints an answer (JSON, or the step view) and ends with its exit_code. */
const show = (asJson: boolean, target: string, transaction: string, phase: string, answer: Answer) =>
  Effect.gen(function* () {
    yield* Console.log(asJson ? JSON.stringify(answer, null, 2) : stepView(target, transaction, phase, answer))
    if (answer.exit_code !== 0) return yield* new ExitWith({ code: answer.exit_code })
  })

/**
 * The phase through the control plane's typed client (StorageApi's `status` or `apply`). The route declares no
 * query (the server checks the raw query itself, answering INVALID_RECONCILE_REQUEST), so the three fields are
 * set on this one request. Refusals stay raw (controlPlaneAt): a refusal is named by the control plane's own code,
 * else by its HTTP status (`HTTP_502` from a proxy), and an answer that is not JSON says so with its status —
 * what an operator needs to see when the answer is not Keel's.
 */
const reconcileThroughControlPlane = (
  access: { readonly url: string; readonly token: string },
  query: { readonly target: string; readonly transaction: string; readonly phase: ReconcilePhase }
) =>
  Effect.gen(function* () {
    const client = yield* controlPlaneAt(access.url, access.token, HttpClientRequest.setUrlParams(query))
    const call = query.phase === "status" ? client.storage.status() : client.storage.apply()
    return yield* call.pipe(
      Effect.catchAll((error) => {
        // Refusals are raw (controlPlaneAt): every answer but a 200 arrives as a ResponseError carrying it.
        if (error._tag === "ResponseError")
          return Effect.flatMap(refusalOf(error.response), ({ body, json, status }) =>
            Effect.fail(
              json === undefined
                ? new CommandFailed({ detail: `the control plane answered ${status} without JSON` })
                : refused({ code: (body.code as string | undefined) ?? `HTTP_${status}`, detail: body.detail })
            )
          )
        // A 200 whose body is not the contract's answer ({exit_code, refusal, report}) is not Keel's answer.
        if (error._tag === "ParseError")
          return Effect.fail(new CommandFailed({ detail: "the control plane answered 200 without JSON" }))
        return Effect.fail(refused(error))
      })
    )
  }).pipe(Effect.provide(FetchHttpClient.layer))

/** `--here`: the phase on this host (how the control plane reaches a target through its channel). */
const onThisHost = (asJson: boolean, target: string, transaction: string, phase: ReconcilePhase) =>
  Effect.gen(function* () {
    const answer = yield* (yield* HandoffHere)
      .onThisHost(target, transaction, phase)
      .pipe(Effect.catchTag("StorageReconciliationFailed", failWith(asJson)))
    yield* show(asJson, target, transaction, phase, answer)
  }).pipe(Effect.provide(HandoffHereLive))

export const storageRootReconcile = ({
  here,
  json,
  phase,
  target,
  transaction,
  worker: asWorker
}: Parsed<typeof storageRootReconcileConfig>) =>
  Effect.gen(function* () {
    if (asWorker && !here) return yield* new CommandFailed({ detail: "--worker goes with --here" })
    if (asWorker) return yield* worker(target, transaction)
    if (here) return yield* onThisHost(json, target, transaction, phase)
    const access = yield* controlPlaneAccess(phase === "status" ? "storage-reconcile-read" : "storage-reconcile-apply")
    const answer = yield* reconcileThroughControlPlane(access, { target, transaction, phase })
    yield* show(json, target, transaction, phase, answer)
  })
