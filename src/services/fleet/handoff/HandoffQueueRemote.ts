import { Effect, Layer } from "effect"
import { QueueDrainTimedOut } from "../../../contracts/fleet/Handoff.js"
import type { CancelledJob } from "../../../contracts/fleet/StorageHandoff.js"
import { FleetConfig } from "../FleetConfig.js"
import type { TargetPause } from "../jobs/JobQueue.js"
import { configuredAccess } from "../objects/ObjectApiClient.js"
import { HandoffQueue, HandoffQueueUnavailable } from "./HandoffQueue.js"

/** How much longer than the drain's own bound the worker waits for the control plane's answer. */
const ANSWER_MARGIN_MILLIS = 30_000

/**
 * The control plane's queue, for a target-resident handoff worker: the queue endpoints of docs/control-plane.md
 * (`/api/fleet/queue/targets/<target>/…`, registry action `storage-queue` for the target), reached at
 * KEEL_CONTROL_PLANE_URL with a token exchanged for the grant in KEEL_HANDOFF_GRANT_FILE (else KEEL_GRANT_FILE).
 * A fresh token per call: a drain may outlast a token's life. The grant's secret stays in its file.
 */
export const HandoffQueueRemote = Layer.effect(
  HandoffQueue,
  Effect.gen(function* () {
    const unavailable = (detail: string) => new HandoffQueueUnavailable({ detail })
    const fleet = yield* FleetConfig

    const call = (target: string, path: string, init: { method: string; body?: unknown }, timeoutMillis = 30_000) =>
      Effect.gen(function* () {
        const access = yield* configuredAccess(["KEEL_HANDOFF_GRANT_FILE", "KEEL_GRANT_FILE"]).pipe(
          Effect.mapError((e) => unavailable(`${e.code}: ${e.detail}`)),
          Effect.provideService(FleetConfig, fleet)
        )
        const base = new URL(access.controlPlaneUrl)
        const token = access.token
        const response = yield* Effect.tryPromise({
          try: () =>
            fetch(new URL(`/api/fleet/queue/targets/${encodeURIComponent(target)}/${path}`, base), {
              method: init.method,
              headers: {
                authorization: `Bearer ${token}`,
                ...(init.body === undefined ? {} : { "content-type": "application/json" })
              },
              ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
              signal: AbortSignal.timeout(timeoutMillis)
            }),
          catch: (error) => unavailable(`${base.origin}: ${(error as Error).message}`)
        })
        const answer = (yield* Effect.promise(() => response.json().catch(() => null))) as Record<
          string,
          unknown
        > | null
        return { status: response.status, answer: answer ?? {} }
      })

    const expectOk = (result: { status: number; answer: Record<string, unknown> }) =>
      result.status === 200
        ? Effect.succeed(result.answer)
        : Effect.fail(
            unavailable(
              `the control plane answered ${result.status} ${String(result.answer.code ?? "")}: ${String(result.answer.detail ?? "")}`
            )
          )

    return {
      pause: (target) =>
        call(target, "pause", { method: "GET" }).pipe(
          Effect.flatMap(expectOk),
          Effect.map((answer) => answer.pause as TargetPause)
        ),
      setPause: (target, pause) =>
        call(target, "pause", { method: "PUT", body: pause }).pipe(Effect.flatMap(expectOk), Effect.asVoid),
      drain: (target, transaction, timeoutMillis) =>
        Effect.gen(function* () {
          const result = yield* call(
            target,
            "drain",
            { method: "POST", body: { transaction, timeout_seconds: Math.ceil(timeoutMillis / 1000) } },
            timeoutMillis + ANSWER_MARGIN_MILLIS
          )
          if (result.status === 409 && result.answer.code === "QUEUE_DRAIN_TIMED_OUT")
            return yield* new QueueDrainTimedOut({
              code: "QUEUE_DRAIN_TIMED_OUT",
              target,
              running: (result.answer.running as ReadonlyArray<string> | undefined) ?? [],
              detail: String(result.answer.detail ?? "")
            })
          const answer = yield* expectOk(result)
          return answer.cancelled as ReadonlyArray<string>
        }),
      cancelledBy: (target, transaction) =>
        call(target, `cancelled?${new URLSearchParams({ transaction })}`, { method: "GET" }).pipe(
          Effect.flatMap(expectOk),
          Effect.map((answer) => answer.jobs as ReadonlyArray<CancelledJob>)
        )
    }
  })
)
