import type { ChildProcess } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, assert, describe, it } from "vitest"
import { postgresSkipReason } from "../support/pg-schema.js"
import { admin, runnersFixture, waitFor } from "../support/runners.js"
import { requestChild, root } from "../support/server.js"

// Issue 45's "a durable workflow killed between steps finishes on another runner, finished steps not re-run"
// (docs/cluster.md, "Failover"). Two `ctl serve` runners on one PostgreSQL schema serve the control plane; a
// FleetProbe (registry → reach → report, one recorded activity each, with a durable pause after each step: the
// workflow's own `pause_ms`) is started through one runner's port. Once its first step's result is in the cluster's
// reply table, the runner hosting the workflow's shard is SIGKILLed, in the pause before the second step. The other
// runner takes the shard, replays the workflow from its recorded activities and finishes it. Proves: the run ends
// `succeeded` on the survivor; each step's own effect (a witness object per time the step's body ran, with its pid)
// is recorded exactly once; the first step's by the killed runner, the next two by the survivor. Bounded: every wait
// has a limit.
const children: Array<ChildProcess> = []
const schemas: Array<string> = []

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL")
  for (const schema of schemas) await admin(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined)
})

// Long enough for the test to see the first step recorded and kill its runner before the second step starts, even
// on a loaded machine (the test fails, rather than passing by luck, if the second step had begun).
const PAUSE_MS = 8_000

describe.skipIf(postgresSkipReason !== undefined)("a durable workflow across a runner's SIGKILL", () => {
  it("a FleetProbe killed between steps finishes on the other runner; finished steps ran once", async () => {
    const started = Date.now()
    const { schema, dir, ctl, runner, runnerPorts } = await runnersFixture(children, schemas, {
      KEEL_REGISTRY: path.join(root, "examples", "registry.yml")
    })
    const grantFile = path.join(dir, "ops.grant")
    await ctl([
      "vault",
      "grant",
      "create",
      "--consumer",
      "ops",
      "--action",
      "fleet-read",
      "--host",
      "forge-1",
      "--out",
      grantFile
    ])
    const servers = await Promise.all([0, 1].map((i) => runner(i, ["controlplane", "vault"])))
    const exchanged = await requestChild(servers[0]!.port, {
      method: "POST",
      path: "/v1/vault/token",
      body: JSON.parse(fs.readFileSync(grantFile, "utf8"))
    })
    assert.strictEqual(exchanged.status, 200, exchanged.body)
    const authorization = `Bearer ${JSON.parse(exchanged.body).token as string}`

    const start = await requestChild(servers[0]!.port, {
      method: "POST",
      path: "/api/workflows/fleet-probe",
      headers: { authorization },
      body: { host: "forge-1", request_id: "failover-1", pause_ms: PAUSE_MS }
    })
    assert.strictEqual(start.status, 202, start.body)
    const executionId = JSON.parse(start.body).execution_id as string

    // The step's witnesses (HostProbe: one object per time its body ran), read from the shared object store.
    const witnesses = async (step: string) =>
      (
        await admin(`SELECT convert_from(body, 'UTF8') AS body FROM ${schema}.objects WHERE key LIKE $1`, [
          `state/probes/${executionId}/${step}.%`
        ])
      ).map((row) => JSON.parse(String(row.body)) as { pid: number; at: string })
    // The first step's result as the workflow engine keeps it (its activity's reply), and the runner whose shard
    // the workflow is on: what the survivor will replay instead of running the step again.
    const recorded = async () =>
      (
        await admin(
          `SELECT l.address FROM ${schema}.cluster_messages m
           JOIN ${schema}.cluster_replies r ON r.request_id = m.id
           JOIN ${schema}.cluster_locks l ON l.shard_id = m.shard_id
           WHERE m.message_id LIKE $1 AND l.address IS NOT NULL`,
          [`Workflow/FleetProbe/${executionId}/activity/registry/%`]
        )
      ).map((row) => String(row.address))
    await waitFor("the first step recorded", async () => (await recorded()).length > 0, 120_000)
    const [hostAddress] = await recorded()
    const victim = runnerPorts.findIndex((port) => `127.0.0.1:${port}` === hostAddress)
    assert.isAtLeast(victim, 0, `the workflow's shard is held by ${hostAddress}, not a runner of this test`)
    const killed = servers[victim]!
    const survivor = servers[1 - victim]!
    killed.child.kill("SIGKILL")
    await new Promise((resolve) => (killed.child.exitCode === null ? killed.child.once("exit", resolve) : resolve(0)))
    const firstRun = await witnesses("1-registry")
    assert.deepStrictEqual(
      firstRun.map((w) => w.pid),
      [killed.child.pid],
      "the first step ran once, on the runner hosting the workflow"
    )
    assert.lengthOf(await witnesses("2-reach"), 0, "killed in the pause, before the second step")
    const killedAt = Date.now()

    let state = "running"
    await waitFor(
      "the probe finished on the survivor",
      async () => {
        const status = await requestChild(survivor.port, {
          method: "GET",
          path: `/api/workflows/fleet-probe/${executionId}`,
          headers: { authorization }
        }).catch(() => undefined)
        if (status?.status === 200) state = JSON.parse(status.body).state as string
        return state !== "running"
      },
      180_000
    )
    assert.strictEqual(state, "succeeded")
    const resumedIn = Date.now() - killedAt
    // Each step's effect once: the first by the killed runner (replayed from its record, not run again), the other
    // two by the survivor.
    const pids: Record<string, Array<number | undefined>> = {}
    for (const step of ["1-registry", "2-reach", "3-report"]) pids[step] = (await witnesses(step)).map((w) => w.pid)
    assert.deepStrictEqual(pids, {
      "1-registry": [killed.child.pid],
      "2-reach": [survivor.child.pid],
      "3-report": [survivor.child.pid]
    })
    // The survivor's second step ran one re-run pause after it took the workflow over.
    const reachAt = Date.parse((await witnesses("2-reach"))[0]!.at)
    const takenOverIn = reachAt - PAUSE_MS - killedAt
    const report = await admin(`SELECT count(*) AS n FROM ${schema}.objects WHERE key = $1`, [
      `state/probes/${executionId}/report.json`
    ])
    assert.strictEqual(Number(report[0]!.n), 1)
    console.log(
      `workflow failover: killed in the pause after step 1; the survivor resumed it ${(takenOverIn / 1000).toFixed(1)} s after the kill (re-running the ${PAUSE_MS / 1000} s pause) and finished it ${(resumedIn / 1000).toFixed(1)} s after; ${((Date.now() - started) / 1000).toFixed(1)} s in all`
    )
  }, 400_000)
})
