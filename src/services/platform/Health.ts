import { Effect } from "effect"
import { HealthStatus, Unhealthy } from "../../contracts/shared/Health.js"
import { Database } from "./Database.js"

/** Liveness with a real dependency check: the process is healthy when its database answers, promptly. */
export class Health extends Effect.Service<Health>()("platform/Health", {
  effect: Effect.gen(function* () {
    const database = yield* Database
    // better-sqlite3 answers synchronously on this thread, so a timer could never pre-empt it; the
    // timeout guards networked databases (pg), where a stuck connection is the failure to report.
    const bounded =
      database.dialect === "sqlite"
        ? database.ping
        : database.ping.pipe(
            Effect.timeoutFail({
              duration: "2 seconds",
              onTimeout: () => new Unhealthy({ detail: "the database did not answer within 2 seconds" })
            })
          )
    const check = bounded.pipe(
      Effect.catchAllDefect((defect) =>
        Effect.fail(new Unhealthy({ detail: `the database is unavailable: ${describe(defect)}` }))
      ),
      Effect.catchTag("SqlError", (error) =>
        Effect.fail(new Unhealthy({ detail: `the database is unavailable: ${error.message}` }))
      ),
      Effect.as(new HealthStatus({ status: "ok" })),
      Effect.withSpan("Health.check")
    )
    return { check } as const
  })
}) {}

const describe = (defect: unknown) => (defect instanceof Error ? defect.message : String(defect))
