import { Config, Context, Effect, Layer, Option, Schedule } from "effect"
import type * as Contract from "../../../../contracts/fleet/Services.js"
import { ObjectGateway } from "../../../platform/objects/ObjectGateway.js"

/** An alert the reconciler raises (seed 002, Events); its shape's home is the contract. */
export type ServiceAlert = typeof Contract.ServiceAlert.Type

export type AlertDelivery = typeof Contract.AlertDelivery.Type

/** Where the reconciler's alerts go. Live: an alert log object per tick and an optional webhook; Memory: a list. */
export class Alerts extends Context.Tag("fleet/Alerts")<
  Alerts,
  { readonly raise: (runId: string, alerts: ReadonlyArray<ServiceAlert>) => Effect.Effect<AlertDelivery> }
>() {}

export const alertLogKey = (runId: string) => `state/autonomy/alerts/${runId}.json`

/**
 * The alert log (`state/autonomy/alerts/<run id>.json`, through the object gateway) and, with
 * KEEL_ALERT_WEBHOOK_URL, a JSON POST of the same document, retried 3 times with backoff (1, 2, 4 s). A failed
 * delivery is reported in the run's report; it never fails the tick.
 */
export const AlertsLive = Layer.effect(
  Alerts,
  Effect.gen(function* () {
    const objects = yield* ObjectGateway
    const webhook = yield* Config.option(Config.string("KEEL_ALERT_WEBHOOK_URL")).pipe(Effect.orDie)
    return {
      raise: (runId, alerts) =>
        Effect.gen(function* () {
          if (alerts.length === 0)
            return {
              log_key: null,
              webhook: Option.isNone(webhook) ? "not_configured" : "not_sent"
            } satisfies AlertDelivery
          const document = { schema: "keel.autonomy.alerts/v1", run_id: runId, alerts }
          const key = alertLogKey(runId)
          const logged = yield* objects.putJson(key, document).pipe(
            Effect.as(key),
            Effect.catchAll(() => Effect.succeed(null))
          )
          if (Option.isNone(webhook)) return { log_key: logged, webhook: "not_configured" } satisfies AlertDelivery
          const post = Effect.tryPromise({
            try: async () => {
              const response = await fetch(webhook.value, {
                method: "POST",
                headers: { "content-type": "application/json" },
                body: JSON.stringify(document),
                signal: AbortSignal.timeout(10_000)
              })
              await response.body?.cancel()
              if (!response.ok) throw new Error(`HTTP ${response.status}`)
            },
            catch: (error) => (error as Error).message
          })
          const delivered = yield* post.pipe(
            Effect.retry(Schedule.intersect(Schedule.exponential("1 second"), Schedule.recurs(3))),
            Effect.either
          )
          return {
            log_key: logged,
            webhook: delivered._tag === "Right" ? "delivered" : { failed: delivered.left }
          } satisfies AlertDelivery
        })
    }
  })
)

/** Alerts kept in a list, for tests and embedders. */
export const makeMemoryAlerts = () => {
  const raised: Array<ServiceAlert> = []
  const alerts: Alerts["Type"] = {
    raise: (_runId, list) =>
      Effect.sync(() => {
        raised.push(...list)
        return { log_key: null, webhook: "not_configured" } satisfies AlertDelivery
      })
  }
  return { alerts, raised: raised as ReadonlyArray<ServiceAlert> }
}

export const MemoryAlerts = (memory = makeMemoryAlerts()) => Layer.succeed(Alerts, memory.alerts)
