import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../../../platform/AppConfig.js"
import { selfEnv } from "../../../platform/ChildEnv.js"
import { processAlive } from "../../../platform/FileLock.js"
import { handoffDir } from "./HandoffFiles.js"

export type HandoffKind = "run" | "rollback"

export interface HandoffPayload {
  readonly target: string
  readonly transaction: string
  readonly attempt: number
}

/**
 * Where a phase's workflow runs once accepted. The control plane runs a local target's phases in its own
 * workflow engine; on a target (`ctl host storage-root-reconcile --here`) they run in a detached worker process
 * on the target's own engine, so the answer comes back at once and the handoff goes on without its caller.
 */
export class HandoffEngine extends Context.Tag("fleet/HandoffEngine")<
  HandoffEngine,
  {
    /** Starts the phase's workflow in the background, or attaches to it (the same payload is the same execution). */
    readonly start: (kind: HandoffKind, payload: HandoffPayload) => Effect.Effect<void>
    /** Makes an execution a killed process interrupted go on from its recorded steps. */
    readonly resume: (kind: HandoffKind, payload: HandoffPayload, executionId: string) => Effect.Effect<void>
    /**
     * Whether the process that runs the transaction's phase is known to be gone (a target's worker whose pid is
     * dead): then a `running` receipt is interrupted, and nothing goes on until Resume (or Rollback) starts another.
     * False where the phase runs in a live engine of this process.
     */
    readonly workerGone: (transaction: string) => Effect.Effect<boolean>
  }
>() {}

/** The worker's pid file: present and alive means a worker is on the transaction already. */
export const workerPidFile = (dir: string) => path.join(dir, "worker.pid")

/** The pid a pid file names (NaN when it cannot be read). */
const pidIn = (file: string) => {
  try {
    return Number(fs.readFileSync(file, "utf8").trim())
  } catch {
    return Number.NaN
  }
}

/** Whether a live worker holds the transaction (its pid file names a running process). */
export const workerAlive = (dir: string) => {
  const pid = pidIn(workerPidFile(dir))
  return Number.isInteger(pid) && pid > 0 && processAlive(pid)
}

/**
 * The target-resident worker: `ctl host storage-root-reconcile TARGET --transaction ID --phase run|rollback --here
 * --worker`, detached, its output appended to `<handoff dir>/worker.log`. It reads the phase and attempt from the
 * receipt, so starting and resuming are the same: a worker already alive on the transaction is left alone.
 * Its environment is Keel's own settings without the secrets (selfEnv).
 */
export const HandoffEngineWorker = Layer.effect(
  HandoffEngine,
  Effect.gen(function* () {
    const config = yield* AppConfig
    const launch = (kind: HandoffKind, payload: HandoffPayload) =>
      Effect.sync(() => {
        const dir = handoffDir(config.dataDir, payload.transaction)
        if (workerAlive(dir)) return
        fs.mkdirSync(dir, { recursive: true })
        const log = fs.openSync(path.join(dir, "worker.log"), "a", 0o600)
        try {
          const argv = [
            ...process.execArgv,
            process.argv[1]!,
            "host",
            "storage-root-reconcile",
            payload.target,
            "--transaction",
            payload.transaction,
            "--phase",
            kind,
            "--here",
            "--worker"
          ]
          const child = spawn(process.execPath, argv, {
            detached: true,
            stdio: ["ignore", log, log],
            cwd: process.cwd(),
            env: selfEnv()
          })
          // The worker's pid in its pid file from the start (the worker claims it as its own): a Status between the
          // start and the worker's first step sees a live worker, never a gone one.
          if (child.pid !== undefined) recordLaunchedWorker(dir, child.pid)
          child.unref()
        } finally {
          fs.closeSync(log)
        }
      })
    return {
      start: launch,
      resume: (kind, payload) => launch(kind, payload),
      workerGone: (transaction) => Effect.sync(() => !workerAlive(handoffDir(config.dataDir, transaction)))
    }
  })
)

/**
 * Writes `pid` into the transaction's pid file, created exclusively: false when another live process holds it; a
 * file naming a dead process is taken over, and one already naming `pid` is kept. Both the launch and the worker
 * claim through here, so when two launches race the first live worker keeps the file and the other, finding it
 * held, exits without running (a launch that overwrote the file let both workers claim the transaction).
 */
const claimPidFile = (dir: string, pid: number): boolean => {
  fs.mkdirSync(dir, { recursive: true })
  const file = workerPidFile(dir)
  for (let tries = 0; tries < 2; tries++) {
    try {
      fs.writeFileSync(file, `${pid}\n`, { flag: "wx", mode: 0o600 })
      return true
    } catch (cause) {
      if ((cause as { code?: string }).code !== "EEXIST") throw cause
      if (pidIn(file) === pid) return true
      if (workerAlive(dir)) return false
      fs.rmSync(file, { force: true })
    }
  }
  return false
}

/** Records a just-started worker's pid (a Status before its first step sees it alive); see claimPidFile. */
export const recordLaunchedWorker = (dir: string, pid: number): boolean => claimPidFile(dir, pid)

/** Makes this process the transaction's worker (its launch may have recorded it already): false when another holds it. */
export const claimWorker = (dir: string): boolean => claimPidFile(dir, process.pid)

/** Gives the pid file up, if it is still this process's. */
export const releaseWorker = (dir: string) => {
  try {
    if (Number(fs.readFileSync(workerPidFile(dir), "utf8").trim()) === process.pid) fs.rmSync(workerPidFile(dir))
  } catch {}
}
