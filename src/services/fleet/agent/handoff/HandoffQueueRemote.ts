import { FetchHttpClient, type HttpClient, type HttpClientError } from "@effect/platform"
import { Effect, Layer } from "effect"
import { QueueDrainTimedOut } from "../../../../contracts/fleet/Handoff.js"
import { FleetConfig } from "../../shared/FleetConfig.js"
import { HandoffQueue, HandoffQueueUnavailable } from "../../shared/handoff/HandoffQueue.js"
import { controlPlaneAt, fetchWithin, refusalOf, thrownBy } from "../../shared/objects/ControlPlaneHttp.js"
import { configuredAccess } from "../../shared/objects/ObjectApiClient.js"

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

    /** The queue's typed client, with a fresh token (a drain may outlast a token's life). */
    const queueClient = Effect.gen(function* () {
      const access = yield* configuredAccess(["KEEL_HANDOFF_GRANT_FILE", "KEEL_GRANT_FILE"]).pipe(
        Effect.mapError((e) => unavailable(`${e.code}: ${e.detail}`)),
        Effect.provideService(FleetConfig, fleet)
      )
      const base = new URL(access.controlPlaneUrl)
      const client = yield* controlPlaneAt(base.origin, access.token).pipe(Effect.provide(FetchHttpClient.layer))
      return { base, queue: client.handoffQueue }
    })

    /** The path's target, encoded as it always was on the wire (HttpApiClient puts a parameter in as given). */
    const at = (target: string) => ({ target: encodeURIComponent(target) })

    /** One call within `timeoutMillis`; anything but its answer is the queue being unavailable, in one line. */
    const call = <A, E, F = never>(
      send: (
        queue: Effect.Effect.Success<typeof queueClient>["queue"]
      ) => Effect.Effect<A, E | HttpClientError.HttpClientError, HttpClient.HttpClient>,
      timeoutMillis = 30_000,
      onRefused?: (refusal: Effect.Effect.Success<ReturnType<typeof refusalOf>>) => F | undefined
    ) =>
      Effect.gen(function* () {
        const { base, queue } = yield* queueClient
        return yield* send(queue).pipe(
          Effect.catchAll((error): Effect.Effect<never, HandoffQueueUnavailable | F> => {
            const tag = (error as { _tag?: string })._tag
            if (tag === "RequestError")
              return Effect.fail(
                unavailable(`${base.origin}: ${thrownBy(error as HttpClientError.RequestError).message}`)
              )
            if (tag !== "ResponseError")
              return Effect.fail(unavailable("the control plane answered 200 : the answer did not decode"))
            return Effect.flatMap(refusalOf((error as HttpClientError.ResponseError).response), (refusal) =>
              Effect.fail(
                onRefused?.(refusal) ??
                  unavailable(
                    `the control plane answered ${refusal.status} ${String(refusal.body.code ?? "")}: ${String(refusal.body.detail ?? "")}`
                  )
              )
            )
          }),
          Effect.provide(fetchWithin(timeoutMillis))
        )
      })

    return {
      pause: (target) => call((queue) => queue.pause({ path: at(target) })).pipe(Effect.map((answer) => answer.pause)),
      setPause: (target, pause) =>
        call((queue) =>
          // Each member of the union on its own: the typed request is one per payload shape.
          pause.set
            ? queue.setPause({ path: at(target), payload: pause })
            : queue.setPause({ path: at(target), payload: pause })
        ).pipe(Effect.asVoid),
      drain: (target, transaction, timeoutMillis) =>
        call(
          (queue) =>
            queue.drain({
              path: at(target),
              payload: { transaction, timeout_seconds: Math.ceil(timeoutMillis / 1000) }
            }),
          timeoutMillis + ANSWER_MARGIN_MILLIS,
          ({ body, status }) =>
            status === 409 && body.code === "QUEUE_DRAIN_TIMED_OUT"
              ? new QueueDrainTimedOut({
                  code: "QUEUE_DRAIN_TIMED_OUT",
                  target,
                  running: (body.running as ReadonlyArray<string> | undefined) ?? [],
                  detail: String(body.detail ?? "")
                })
              : undefined
        ).pipe(Effect.map((answer) => answer.cancelled)),
      cancelledBy: (target, transaction) =>
        call((queue) => queue.cancelled({ path: at(target), urlParams: { transaction } })).pipe(
          Effect.map((answer) => answer.jobs)
        )
    }
  })
)
