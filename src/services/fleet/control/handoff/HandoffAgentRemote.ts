import { Effect } from "effect"
import { StoragePhaseOperation } from "../../../../contracts/fleet/HostAgent.js"
import type { HandoffAgentOn } from "../../shared/handoff/HandoffAgent.js"
import { reconcileFailed as failed } from "../../shared/handoff/HandoffTarget.js"
import type { Target } from "../../shared/registry/Schema.js"
import { RemoteCtl } from "../RemoteCtl.js"

/**
 * Another host's side of the storage-root handoff: its own `ctl host storage-root-reconcile --here --json` through
 * its channel (StoragePhaseOperation), which does the phase there (Run and Rollback in a detached worker) and
 * answers from its recorded receipt. A host that cannot be asked, or answers no report, is a reconciliation failure.
 */
export const makeRemoteHandoffAgent = Effect.map(
  RemoteCtl,
  (remote) =>
    (target: Target): HandoffAgentOn => ({
      phase: (transaction, phase) =>
        remote.call(target, StoragePhaseOperation, { target: target.name, transaction, phase }).pipe(
          Effect.mapError((e) =>
            e._tag === "RemoteAnswerInvalid"
              ? failed(`${target.name} answered no report`)
              : failed(`${target.name} could not be asked: ${e.detail}`)
          ),
          Effect.flatMap(({ answer }) =>
            "error" in answer
              ? Effect.fail(failed(`${target.name}: ${answer.error.detail}`))
              : // The report travels whole, as the target wrote it (the contract describes it, never decodes it).
                Effect.succeed(answer)
          )
        )
    })
)
