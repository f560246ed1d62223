import type { ChildProcess } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { ctlBin, startServer } from "../support/server.js"

// Issue 22, item 9: a real `ctl serve` on an empty data dir, with its demo data, as `npm start` runs it.
const children: Array<ChildProcess> = []

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL")
})

interface Point {
  readonly price: number
  readonly timestamp: string
}

const getJson = async (port: number, pathname: string) => {
  const response = await fetch(`http://127.0.0.1:${port}${pathname}`)
  expect(response.status, pathname).toBe(200)
  return (await response.json()) as {
    current: { price: number }
    price_change_percent: number
    history: ReadonlyArray<Point>
  }
}

describe("the coin's history on a fresh demo start", () => {
  it("starts at the demo's prices and continues at the demo's price: no step at server start", async () => {
    const dataDir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-start-")), "data")
    const startedAt = Date.now()
    const server = await startServer(
      [ctlBin, "serve", "--port", "0"],
      { KEEL_DATA_DIR: dataDir, KEEL_DEMO_DATA: "true", GT_REGISTRY_REPO: path.join(dataDir, "no-registry") },
      children
    )
    // Every point the server has, at full resolution, in time order.
    const all = await getJson(server.port, "/api/coin/history?period=all&limit=1000&sampling=none")
    const points = all.history
    expect(points.length).toBeGreaterThan(100) // a month of demo prices, a point every six hours
    expect(Date.parse(points[0]!.timestamp)).toBeLessThan(startedAt - 29 * 86_400_000)
    // The demo's walk ends at the price the coin has now; whatever was recorded since the server
    // started (the sampler's first tick included) is that price, not the configured initial price.
    const sinceStart = points.filter((p) => Date.parse(p.timestamp) >= startedAt)
    expect(sinceStart.length).toBeGreaterThan(0)
    for (const point of sinceStart) expect(point.price, point.timestamp).toBe(all.current.price)
    expect(points.at(-1)!.price).toBe(all.current.price)
    // The last hour is flat at the demo's price.
    const hour = await getJson(server.port, "/api/coin/history?period=1h")
    for (const point of hour.history) expect(point.price).toBe(all.current.price)
    expect(hour.price_change_percent).toBe(0)

    // The demo's zero-burn agent (MUSE) and a burning one (SAGE), as a typed client reads them.
    const muse = (await (await fetch(`http://127.0.0.1:${server.port}/api/agents/MUSE`)).json()) as Record<
      string,
      unknown
    >
    const sage = (await (await fetch(`http://127.0.0.1:${server.port}/api/agents/SAGE`)).json()) as Record<
      string,
      unknown
    >
    expect([muse.runway_hours, muse.runway_infinite]).toEqual([Number.MAX_VALUE, true])
    expect(typeof sage.runway_hours).toBe("number")
    expect(sage.runway_infinite).toBe(false)
    expect(sage.runway_hours as number).toBeLessThan(1_000)
  }, 180_000) // a bound on a hang: the server's start takes 10–20 s on a loaded machine
})
