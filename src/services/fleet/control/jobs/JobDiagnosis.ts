import { Effect } from "effect"
import { JobQueue } from "../../shared/jobs/JobQueue.js"
import { ProviderProfile } from "../providers/ProviderProfile.js"
import { diagnose } from "./FailureTable.js"

/**
 * A job and, when it failed, what its output says went wrong: the failures any job may show, and those of the
 * provider adapters the selected profile enables (the profile is part of the answer, so a diagnosis that a disabled
 * provider would have made is explained, not silently missing).
 */
export class JobDiagnosis extends Effect.Service<JobDiagnosis>()("fleet/JobDiagnosis", {
  effect: Effect.gen(function* () {
    const queue = yield* JobQueue
    const profiles = yield* ProviderProfile

    const status = (id: string) =>
      Effect.gen(function* () {
        const job = yield* queue.get(id)
        if (job.state !== "failed") return { job, diagnosis: null }
        const { adapters, ...profile } = yield* profiles.selected
        return { job, diagnosis: { ...diagnose(yield* queue.fullOutput(id), adapters), profile } }
      })

    return { status } as const
  })
}) {}
