import * as fs from "node:fs"
import * as path from "node:path"
import type { Page } from "playwright-core"
import { runCtlOk } from "./server.js"

/**
 * Control-plane credentials and fleet data for the dashboard's Fleet and Handoff tests, against `dashboardServer`
 * (its demo registry: forge-1 local, forge-2 and studio-mac over ssh; consumers `dashboard` hold fleet-read and
 * storage-reconcile-read, `ops` both storage-reconcile actions, `beacon-forge-1` the beacon's, `autonomy`
 * service-ensure). Grants are made by `ctl vault grant create` in the server's data dir, as an operator would.
 */

export interface GrantCredential {
  readonly grant_id: string
  readonly consumer: string
  readonly secret: string
}

export const DEMO_HOSTS = ["forge-1", "forge-2", "studio-mac"] as const

export const grantCredential = async (
  dataDir: string,
  consumer: string,
  actions: ReadonlyArray<string>,
  hosts: ReadonlyArray<string> = []
): Promise<GrantCredential> => {
  const out = path.join(dataDir, `${consumer}-${Date.now()}-${Math.random().toString(16).slice(2)}.grant`)
  await runCtlOk(
    [
      "vault",
      "grant",
      "create",
      "--consumer",
      consumer,
      ...actions.flatMap((action) => ["--action", action]),
      ...hosts.flatMap((host) => ["--host", host]),
      "--out",
      out
    ],
    { ...process.env, KEEL_DATA_DIR: dataDir, KEEL_LOG_LEVEL: "warning" }
  )
  return JSON.parse(fs.readFileSync(out, "utf8")) as GrantCredential
}

/** The token the vault exchanges for a grant credential (POST /v1/vault/token). */
export const exchangeToken = async (base: string, credential: GrantCredential): Promise<string> => {
  const answer = await fetch(`${base}/v1/vault/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ grant_id: credential.grant_id, consumer: credential.consumer, secret: credential.secret })
  })
  if (answer.status !== 200) throw new Error(`token exchange: ${answer.status} ${await answer.text()}`)
  return ((await answer.json()) as { token: string }).token
}

/** A GET of the control plane with a token: its status and JSON body. */
export const getJson = async (base: string, route: string, token: string) => {
  const answer = await fetch(`${base}${route}`, { headers: { authorization: `Bearer ${token}` } })
  // biome-ignore lint/suspicious/noExplicitAny: answers are compared field by field
  return { status: answer.status, body: (await answer.json()) as any }
}

const put = async (base: string, route: string, token: string, body: unknown) => {
  const answer = await fetch(`${base}${route}`, {
    method: route === "/api/fleet/services/runs" ? "POST" : "PUT",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  if (answer.status >= 300) throw new Error(`${route}: ${answer.status} ${await answer.text()}`)
}

/**
 * What forge-1 would publish (a beacon with two filesystems and a unit, its capacity and its janitor's last pass) and
 * one reconciliation tick (report mode: it plans, executes nothing), so the Fleet page has every part to show.
 */
export const seedFleet = async (base: string, dataDir: string) => {
  const beacon = await exchangeToken(
    base,
    await grantCredential(dataDir, "beacon-forge-1", ["host-health-write", "host-state-write"], ["forge-1"])
  )
  const now = new Date().toISOString().replace(/\.\d+Z$/, ".000Z")
  await put(base, "/api/host-health", beacon, {
    schema: "keel.beacon/v1",
    host: "forge-1",
    os: "linux",
    reported_at: now,
    writer_version: "ui-test",
    disks: [
      {
        mount: "/",
        total_bytes: 100_000_000_000,
        free_bytes: 40_000_000_000,
        available_bytes: 38_000_000_000,
        error: null
      },
      {
        mount: "/var/lib/keel",
        total_bytes: 500_000_000_000,
        free_bytes: 120_000_000_000,
        available_bytes: 110_000_000_000,
        error: null
      }
    ],
    units: [
      {
        name: "keel-api",
        unit: "/etc/systemd/system/keel-api.service",
        manager: "systemd",
        load_state: "loaded",
        active_state: "active",
        sub_state: "running",
        main_pid: 4242,
        exec_start: "/usr/local/bin/ctl serve --port 8080",
        fragment_path: "/etc/systemd/system/keel-api.service",
        process: null,
        error: null
      }
    ]
  })
  await put(base, "/api/objects/state/janitor/forge-1.json", beacon, {
    host: "forge-1",
    cleanup_state: { outcome: "healthy_noop", report: null }
  })
  await put(base, "/api/objects/state/capacity/forge-1.json", beacon, {
    host: "forge-1",
    published_at: now,
    admitting: true,
    state: "ready",
    reason: "35.4 GiB free on /, above low_free_gb 40"
  })
  const autonomy = await exchangeToken(base, await grantCredential(dataDir, "autonomy", ["service-ensure"]))
  await put(base, "/api/fleet/services/runs", autonomy, undefined)
}

/** Enters a grant credential on the page's grant-exchange form and waits for the token it was issued. */
export const exchangeOnPage = async (page: Page, credential: GrantCredential) => {
  // The form is folded under its summary until opened (it stays open once it is).
  if ((await page.locator(".vault-access details").getAttribute("open")) === null)
    await page.getByText("Or exchange a grant credential for a token").click()
  const form = page.getByRole("form", { name: "grant exchange" })
  await form.getByLabel("grant id").fill(credential.grant_id)
  await form.getByLabel("consumer").fill(credential.consumer)
  await form.getByLabel("secret").fill(credential.secret)
  await form.getByRole("button", { name: "Exchange" }).click()
  await page.getByText(`Token issued to ${credential.consumer}`).waitFor()
}

/** Chromium logs each answer >= 400 to a fetch as a console error; a test that forces those expects exactly them. */
export const unexpectedErrors = (errors: ReadonlyArray<string>, statuses: ReadonlyArray<number>) =>
  errors.filter(
    (error) =>
      !statuses.some((status) =>
        error.startsWith(`Failed to load resource: the server responded with a status of ${status}`)
      )
  )
