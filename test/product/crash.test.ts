import type { ChildProcess } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import * as YAML from "yaml"
import { queryDataDir } from "../support/data-dir-db.js"
import { ctlBin, requestChild, startServer as startChild } from "../support/server.js"

// Real processes of the built package (npm test builds first): a server killed with SIGKILL while
// assignments and collector batches are being group-committed.
const children: Array<ChildProcess> = []
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL")
})

const KEY = "pk_crash_0123456789"

const setup = () => {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), "keel-product-crash-"))
  const registry = path.join(base, "product-registry.yml")
  fs.writeFileSync(
    registry,
    YAML.stringify({
      apps: [
        {
          app_id: "crash",
          client_keys: [KEY],
          journeys: [
            {
              platform: "ios",
              surface: "home",
              experiment: {
                id: "crash-exp",
                status: "running",
                traffic: 1,
                variants: [
                  { name: "control", weight: 0.5, config: {} },
                  { name: "treatment", weight: 0.5, config: {} }
                ]
              }
            }
          ]
        }
      ]
    })
  )
  return {
    dataDir: path.join(base, "data"),
    env: (dataDir: string) => ({
      KEEL_DATA_DIR: dataDir,
      KEEL_DEMO_DATA: "false",
      KEEL_PRODUCT_REGISTRY: registry,
      KEEL_COLLECT_SITES: "crash-site"
    })
  }
}

const request = (port: number, method: "GET" | "POST", pathname: string, body?: unknown) =>
  requestChild(port, { method, path: pathname, headers: { "x-client-key": KEY }, body })

describe("a crash while assignments and events are group-committed", () => {
  it("after kill -9, every assignment and every event answered before it is stored", async () => {
    const { dataDir, env } = setup()
    const server = await startChild([ctlBin, "serve", "--port", "0"], env(dataDir), children)
    const assigned = new Map<string, string>()
    const collected: Array<string> = []
    let stop = false
    const assigner = async (worker: number) => {
      for (let i = 0; i < 2_000 && !stop; i++) {
        const subject = `s-${worker}-${i}`
        const answer = await request(
          server.port,
          "GET",
          `/api/experiments/assign?app_id=crash&platform=ios&surface=home&subject=${subject}`
        ).catch(() => undefined)
        if (answer === undefined) return // the server is gone
        if (answer.status === 200) assigned.set(subject, JSON.parse(answer.body).variant)
      }
    }
    const collector = async (worker: number) => {
      for (let i = 0; i < 2_000 && !stop; i++) {
        const ids = Array.from({ length: 10 }, (_, j) => `e-${worker}-${i}-${j}`)
        const answer = await request(server.port, "POST", "/api/analytics/web/collect", {
          site_id: "crash-site",
          events: ids.map((event_id, j) => ({
            event_id,
            name: "pageview",
            timestamp: 1_790_000_000_000 + i * 10 + j,
            visitor_id: `v-${worker}`,
            url: "https://keel.dev/"
          }))
        }).catch(() => undefined)
        if (answer === undefined) return
        if (answer.status === 202 && JSON.parse(answer.body).accepted === ids.length) collected.push(...ids)
      }
    }
    const load = Promise.all([0, 1, 2, 3].flatMap((w) => [assigner(w), collector(w)]))
    // Bounded by the requests the workers send; the deadline only guards a server that stopped answering.
    const deadline = Date.now() + 120_000
    while ((assigned.size < 100 || collected.length < 500) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 10))
    server.child.kill("SIGKILL")
    stop = true
    await load
    expect(assigned.size).toBeGreaterThanOrEqual(100)
    expect(collected.length).toBeGreaterThanOrEqual(500)

    const stored = new Map(
      (
        await queryDataDir<{ subject: string; variant: string }>(
          dataDir,
          "SELECT subject, variant FROM experiment_assignments WHERE experiment_id = 'crash-exp'"
        )
      ).map((row) => [row.subject, row.variant])
    )
    const events = new Set(
      (
        await queryDataDir<{ event_id: string }>(
          dataDir,
          "SELECT event_id FROM analytics_events WHERE site_id = 'crash-site'"
        )
      ).map((row) => row.event_id)
    )
    for (const [subject, variant] of assigned) expect(stored.get(subject), `assignment of ${subject}`).toBe(variant)
    for (const id of collected) expect(events.has(id), `event ${id} answered 202 but not stored`).toBe(true)
  }, 300_000)
})
