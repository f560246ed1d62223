import * as http from "node:http"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Option } from "effect"
import {
  Alerts,
  AlertsLive,
  alertLogKey,
  MemoryObjectStoreLayer,
  ObjectGateway,
  type ServiceAlert
} from "../support/keel.js"

// Issue 17: the reconciler's alerts, delivered — an alert log object per tick, and a webhook POST retried
// until it is taken (or given up on, reported, never failing the tick).

const alert: ServiceAlert = {
  kind: "identity_unresolved",
  target: "forge-1",
  service: "keel-api",
  delivery: "once",
  reason: "the live process runs /usr/bin/python3, not the declared /usr/local/bin/ctl",
  run_id: "2026-11-24T12-00-00.000Z-abcdef",
  raised_at: "2026-11-24T12:00:01.000Z"
}

/** A webhook on loopback that refuses the first `failures` deliveries with 503, then takes them. */
const webhook = (failures: number) =>
  Effect.acquireRelease(
    Effect.async<{ url: string; received: Array<unknown>; server: http.Server }>((resume) => {
      const received: Array<unknown> = []
      let seen = 0
      const server = http.createServer((request, response) => {
        let body = ""
        request.on("data", (chunk) => {
          body += chunk
        })
        request.on("end", () => {
          seen++
          if (seen <= failures) {
            response.statusCode = 503
            return response.end()
          }
          received.push(JSON.parse(body))
          response.end("ok")
        })
      })
      server.listen(0, "127.0.0.1", () =>
        resume(
          Effect.succeed({
            url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`,
            received,
            server
          })
        )
      )
    }),
    ({ server }) => Effect.sync(() => server.close())
  )

const live = (env: Record<string, string>) =>
  AlertsLive.pipe(
    Layer.provideMerge(ObjectGateway.Default),
    Layer.provide(MemoryObjectStoreLayer),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))
  )

describe("alert delivery", () => {
  it.live(
    "the alert log object, and a webhook retried past two refusals",
    () =>
      Effect.gen(function* () {
        const hook = yield* webhook(2)
        yield* Effect.gen(function* () {
          const delivery = yield* (yield* Alerts).raise(alert.run_id, [alert])
          assert.deepStrictEqual(delivery, { log_key: alertLogKey(alert.run_id), webhook: "delivered" })
          const logged = Option.getOrThrow(yield* (yield* ObjectGateway).getJson(alertLogKey(alert.run_id)))
          assert.deepStrictEqual(logged, { schema: "keel.autonomy.alerts/v1", run_id: alert.run_id, alerts: [alert] })
          assert.deepStrictEqual(hook.received, [logged], "the webhook got the same document, once")
        }).pipe(Effect.provide(live({ KEEL_ALERT_WEBHOOK_URL: hook.url })))
      }).pipe(Effect.scoped),
    30_000
  )

  it.live(
    "a webhook that never takes them: reported failed after its retries; no alerts, nothing sent",
    () =>
      Effect.gen(function* () {
        const hook = yield* webhook(100)
        yield* Effect.gen(function* () {
          const alerts = yield* Alerts
          const failed = yield* alerts.raise(alert.run_id, [alert])
          assert.deepStrictEqual(failed, { log_key: alertLogKey(alert.run_id), webhook: { failed: "HTTP 503" } })
          assert.deepStrictEqual(yield* alerts.raise("quiet", []), { log_key: null, webhook: "not_sent" })
        }).pipe(Effect.provide(live({ KEEL_ALERT_WEBHOOK_URL: hook.url })))
      }).pipe(Effect.scoped),
    30_000
  )
})
