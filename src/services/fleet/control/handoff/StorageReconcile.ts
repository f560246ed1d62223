import { Effect } from "effect"
import type { ReconcilePhase } from "../../../../contracts/fleet/Handoff.js"
import { type ReconcileAnswer, reportState, reportTransaction } from "../../../../contracts/fleet/HandoffReport.js"
import { clusterSettings } from "../../../platform/ClusterConfig.js"
import { Leases } from "../../../platform/Leases.js"
import { HandoffAgent } from "../../shared/handoff/HandoffAgent.js"
import {
  declaredTarget,
  reconcileFailed as failed,
  OPEN_TRANSACTION_TTL,
  refusedPhase as refuse,
  transactionLeaseKey
} from "../../shared/handoff/HandoffTarget.js"
import { FleetRegistry } from "../../shared/registry/Registry.js"
import type { Target } from "../../shared/registry/Schema.js"

/**
 * The storage-root handoff as the control plane drives it (seed 002, "Storage-root handoff"; docs/handoff.md): a
 * phase runs on the target's own agent (HandoffAgent: this host's for a `local` target, else the target's `ctl`
 * through its channel); for a remote target the control plane also holds the one-transaction-per-target lease.
 */
export class StorageReconcile extends Effect.Service<StorageReconcile>()("fleet/StorageReconcile", {
  effect: Effect.gen(function* () {
    const registry = yield* FleetRegistry
    const leases = yield* Leases
    const agents = yield* HandoffAgent
    const runners = (yield* clusterSettings).mode === "runners"

    const storageOf = (target: string) =>
      declaredTarget(registry, target).pipe(Effect.mapError((e) => failed(e.detail)))

    /**
     * A phase on a target reached over ssh: the control plane holds the one-transaction-per-target lease, and the
     * target's own `ctl host storage-root-reconcile --here` does the phase (Run and Rollback in a detached worker
     * there) and answers from its recorded receipt.
     */
    const throughChannel = (target: Target, transaction: string, phase: ReconcilePhase) =>
      Effect.gen(function* () {
        const ask = (id: string, asked: ReconcilePhase) => agents.for(target).phase(id, asked)
        const ended = (reply: ReconcileAnswer) => {
          const state = reportState(reply.report)
          return state === "rolled_back" || state === "complete"
        }
        if (phase === "run" || phase === "resume") {
          const lock = () =>
            leases.acquire(transactionLeaseKey(target.name), transaction, OPEN_TRANSACTION_TTL).pipe(Effect.either)
          let held = yield* lock()
          if (held._tag === "Left" && held.left._tag === "LeaseHeld") {
            // The holder may have ended on the target (a rollback finishes in its worker): then it no longer holds.
            const holder = held.left.holder
            const previous = yield* ask(holder, "status").pipe(Effect.option)
            if (previous._tag === "Some" && ended(previous.value)) {
              yield* leases.release(transactionLeaseKey(target.name), holder).pipe(Effect.ignore)
              held = yield* lock()
            }
          }
          if (held._tag === "Left")
            return refuse(
              "transaction_in_progress",
              held.left._tag === "LeaseHeld"
                ? `transaction ${held.left.holder} is open on ${target.name}`
                : held.left.detail
            )
        }
        const reply = yield* ask(transaction, phase).pipe(
          // Unreachable: the control plane's lock goes (the target's own lease still guards the target itself).
          Effect.tapError(() =>
            phase === "run" || phase === "resume"
              ? leases.release(transactionLeaseKey(target.name), transaction).pipe(Effect.ignore)
              : Effect.void
          )
        )
        const ownReport = reportTransaction(reply.report) === transaction
        // A refusal before the target recorded anything of this transaction leaves nothing open to hold the lease.
        if (ended(reply) || (reply.exit_code === 2 && !ownReport && (phase === "run" || phase === "resume")))
          yield* leases.release(transactionLeaseKey(target.name), transaction).pipe(Effect.ignore)
        return reply
      })

    /** A phase wherever the target is: on this host for a `local` channel, else through the target's channel. */
    const phase = (target: string, transaction: string, asked: ReconcilePhase) =>
      Effect.gen(function* () {
        const declared = yield* storageOf(target)
        if (declared !== undefined && declared.channel !== "local" && declared.storage !== undefined)
          return yield* throughChannel(declared, transaction, asked)
        // A `local` target is "the control plane's own host", which several runners on several machines do not
        // have: its phases would run in the shared engine, on whichever runner holds the workflow's shard, against
        // that machine's disk. Refused before anything (docs/cluster.md, "What runs where"); a target reached over
        // ssh runs its phases in its own engine on its own machine, pinned by construction.
        if (runners && declared?.channel === "local")
          return refuse(
            "local_target_in_runners_mode",
            `${target} is a local target, and in runners mode no one machine is the control plane's: declare it with ` +
              "an ssh channel to its host, whose own ctl runs the handoff there"
          )
        return yield* agents.here(target).phase(transaction, asked)
      })

    return { phase } as const
  })
}) {}
