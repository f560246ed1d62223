import { Effect } from "effect"
import type { HandoffAgentOn } from "../../shared/handoff/HandoffAgent.js"
import { HandoffHere } from "./HandoffHere.js"

/** This host's side of the storage-root handoff, in-process: what its `ctl host storage-root-reconcile --here` runs. */
export const makeLocalHandoffAgent = Effect.map(
  HandoffHere,
  (here) =>
    (target: string): HandoffAgentOn => ({
      phase: (transaction, phase) => here.onThisHost(target, transaction, phase)
    })
)
