import * as path from "node:path"
import { ClusterWorkflowEngine } from "@effect/cluster"
import { Effect, Layer } from "effect"
import { HandoffEngineWorker } from "../services/fleet/agent/handoff/HandoffEngine.js"
import { HandoffHere } from "../services/fleet/agent/handoff/HandoffHere.js"
import { HandoffQueueRemote } from "../services/fleet/agent/handoff/HandoffQueueRemote.js"
import { AppConfig } from "../services/platform/AppConfig.js"
import { singleRunner } from "../services/platform/Cluster.js"
import { ensurePrivateDir, preparePrivateDatabase } from "../services/platform/PrivateFiles.js"
import * as SqliteImmediate from "../services/platform/sql/SqliteImmediate.js"
import { ServicesLive } from "./Live.js"
import { HandoffWorkflowsLive, HostReach } from "./Services.js"

/**
 * `ctl host storage-root-reconcile --here` on a target: the phase on this host's files, units and leases, the
 * queue reached at the control plane, Run and Rollback handed to a detached worker (docs/handoff.md).
 */
export const HandoffHereLive = HandoffHere.Default.pipe(
  Layer.provide(Layer.merge(HandoffEngineWorker, HandoffQueueRemote)),
  Layer.provideMerge(HostReach),
  Layer.provideMerge(ServicesLive)
)

/**
 * The worker's own workflow engine: one runner owning every shard, its messages in `<data dir>/handoff/engine.db`
 * — the target's SQL storage for handoffs, apart from the database a server on the host may run its own runner
 * on. One worker per transaction at a time (its pid file), so no shard lock is needed.
 */
const HandoffEngineRunner = Layer.unwrapEffect(
  Effect.gen(function* () {
    const config = yield* AppConfig
    const file = path.join(config.dataDir, "handoff", "engine.db")
    // Owner-only like the data dir's own database (docs/security.md).
    yield* Effect.orDie(Effect.zipRight(ensurePrivateDir(config.dataDir), preparePrivateDatabase(file)))
    return singleRunner({
      pollInterval: "500 millis",
      runnerStorage: "memory",
      simulateRemoteSerialization: false
    }).pipe(Layer.provide(SqliteImmediate.layer({ filename: file })))
  })
)

/** `ctl host storage-root-reconcile --here --worker`: the handoff's workflows on the target's own engine. */
export const HandoffWorkerLive = HandoffWorkflowsLive.pipe(
  Layer.provideMerge(ClusterWorkflowEngine.layer),
  Layer.provideMerge(HandoffEngineRunner),
  Layer.provide(HandoffQueueRemote),
  Layer.provideMerge(HostReach),
  Layer.provideMerge(ServicesLive)
)
