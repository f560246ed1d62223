import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { ControlPlaneApi } from "../../contracts/controlplane/Api.js"
import { jobView } from "../../services/fleet/control/jobs/JobView.js"
import { JobQueue } from "../../services/fleet/shared/jobs/JobQueue.js"
import { grantForHost } from "./FleetAuth.js"

/** Fleet jobs for clients off the control plane: `job-submit` for the job's target (docs/control-plane.md, "Jobs"). */
export const JobsLive = HttpApiBuilder.group(ControlPlaneApi, "jobs", (handlers) =>
  Effect.gen(function* () {
    const queue = yield* JobQueue
    return handlers
      .handle("submit", ({ payload }) =>
        Effect.gen(function* () {
          yield* grantForHost(payload.target)
          const job = yield* queue.submitAs(
            { kind: payload.kind, target: payload.target, argv: payload.argv, idempotencyKey: payload.idempotency_key },
            // Another target's job is not this caller's to learn about (its id, target or command).
            (target) => Effect.isSuccess(grantForHost(target))
          )
          return jobView(job)
        })
      )
      .handle("live", ({ urlParams }) =>
        Effect.gen(function* () {
          yield* grantForHost(urlParams.target)
          const jobs = yield* queue.liveOn(urlParams.target, urlParams.state)
          return { target: urlParams.target, state: urlParams.state, jobs: jobs.map(jobView) }
        })
      )
      .handle("job", ({ path, urlParams }) =>
        Effect.gen(function* () {
          // FleetAuth checked the action first (a caller without it learns nothing about ids); then the job's target.
          const job = yield* queue.get(path.id)
          yield* grantForHost(job.target)
          const page = yield* queue.output(job.id, urlParams.cursor ?? 0, urlParams.limit ?? 500)
          return {
            job: jobView(job),
            output: {
              lines: page.lines.map((l) => ({ line_no: l.lineNo, stream: l.stream, line: l.line })),
              next: page.next
            }
          }
        })
      )
  })
)
