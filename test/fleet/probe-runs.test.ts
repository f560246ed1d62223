import { assert, describe, it } from "@effect/vitest"
import { WorkflowEngine } from "@effect/workflow"
import { Deferred, Effect, Layer } from "effect"
import { FleetProbeLive } from "../../src/actors/FleetProbe.js"
import { HostProbe } from "../../src/services/fleet/control/probe/HostProbe.js"
import { ProbeRuns } from "../../src/services/fleet/control/probe/ProbeRuns.js"
import { ServicesTest } from "../support/keel.js"

// A probe's status while its first step still runs: the workflow engine keeps a run's reply only once it has
// suspended or ended, so a status asked between the start and then found no run and answered 404 (seen on a
// loaded machine, and on PostgreSQL, where a step takes longer). The run is known by the host recorded at its
// start: it is running. Here the first step waits until the test lets it go.
describe("a probe run's status before its first step ends", () => {
  it.live(
    "is running (not WORKFLOW_NOT_FOUND), then succeeded; an id nobody started is still not found",
    () =>
      Effect.gen(function* () {
        const registryStep = yield* Deferred.make<void>()
        const steps = {
          declared: () => Effect.as(Deferred.await(registryStep), { digest: "d1" }),
          reach: () => Effect.succeed({ kernel: "Linux 6.1" }),
          report: () => Effect.succeed({})
        } as unknown as HostProbe
        const graph = ProbeRuns.Default.pipe(
          Layer.provideMerge(FleetProbeLive.pipe(Layer.provide(Layer.succeed(HostProbe, steps)))),
          Layer.provideMerge(WorkflowEngine.layerMemory),
          Layer.provideMerge(ServicesTest())
        )
        yield* Effect.gen(function* () {
          const runs = yield* ProbeRuns
          const authorized = () => Effect.void
          const started = yield* runs.start({ host: "forge-1", request_id: "r1" })
          const during = yield* runs.status(started.execution_id, authorized)
          assert.strictEqual(during.state, "running")
          yield* Deferred.succeed(registryStep, undefined)
          let done = during
          // Bounded: the remaining steps answer at once.
          for (let i = 0; i < 200 && done.state === "running"; i++) {
            yield* Effect.sleep("25 millis")
            done = yield* runs.status(started.execution_id, authorized)
          }
          assert.strictEqual(done.state, "succeeded")
          const unknown = yield* Effect.flip(runs.status("0".repeat(32), authorized))
          assert.strictEqual(unknown._tag, "WorkflowNotFound")
        }).pipe(Effect.provide(graph))
      }),
    60_000
  )
})
