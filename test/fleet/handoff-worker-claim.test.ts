import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, assert, describe, it } from "vitest"
import { claimWorker, recordLaunchedWorker, workerPidFile } from "../support/keel.js"

// One worker per handoff transaction (docs/handoff.md): the pid file is claimed exclusively by the launch and by the
// worker alike, so two launches racing on one transaction leave one worker running it.

const sleepers: Array<ReturnType<typeof spawn>> = []
afterAll(() => {
  for (const child of sleepers) child.kill("SIGKILL")
})

/** A live process that is not this one (a stand-in for another launch's worker). */
const liveProcess = () => {
  const child = spawn("sleep", ["600"], { stdio: "ignore" })
  sleepers.push(child)
  return child.pid!
}

const handoffDir = () => path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-claim-")), "handoff", "t")
const holder = (dir: string) => Number(fs.readFileSync(workerPidFile(dir), "utf8").trim())

describe("a handoff transaction's worker pid file", () => {
  it("a second launch never takes the file from a live worker: its worker, finding it held, does not run", () => {
    const dir = handoffDir()
    const first = liveProcess()
    const second = liveProcess()
    assert.isTrue(recordLaunchedWorker(dir, first))
    assert.isFalse(recordLaunchedWorker(dir, second), "the second launch's worker is not recorded")
    assert.strictEqual(holder(dir), first, "the first worker keeps the file")
    assert.isFalse(claimWorker(dir), "another process finds it held")
  })

  it("a worker already recorded by its launch claims it; a file naming a dead process is taken over", async () => {
    const dir = handoffDir()
    assert.isTrue(recordLaunchedWorker(dir, process.pid))
    assert.isTrue(claimWorker(dir), "the recorded worker is this process")
    const dead = spawn("true", { stdio: "ignore" })
    await new Promise((resolve) => dead.once("exit", resolve))
    fs.writeFileSync(workerPidFile(dir), `${dead.pid}\n`)
    const next = liveProcess()
    assert.isTrue(recordLaunchedWorker(dir, next))
    assert.strictEqual(holder(dir), next)
  })
})
