import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"

// scripts/architecture-check.mjs is CI's architecture gate (.ci/run). Its verdicts, on small trees made here:
// a clean tree passes; an import up a layer, one between the fleet's control plane and its agent, or a cycle
// fails; a long function is reported, and fails only under --max-own-lines; an allowed arrow passes until it is
// gone, and then its allowance fails.

const script = fileURLToPath(new URL("../../scripts/architecture-check.mjs", import.meta.url))

interface Run {
  readonly code: number
  readonly stdout: string
}

const check = (root: string, ...args: ReadonlyArray<string>) =>
  new Promise<Run>((resolve) => {
    execFile(process.execPath, [script, "--root", root, ...args], (error, stdout) => {
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : -1, stdout })
    })
  })

/** A tree with a tsconfig.json and the given files under it. */
const tree = (files: Record<string, string>) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "keel-arch-"))
  fs.writeFileSync(
    path.join(root, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { noEmit: true, strict: true, types: [] }, include: ["src"] })
  )
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true })
    fs.writeFileSync(path.join(root, file), text)
  }
  return root
}

const lines = (n: number) => Array.from({ length: n }, (_, i) => `  const v${i} = ${i}`).join("\n")

/** One file per layer, each importing the one below it (and the contracts): every arrow points down. */
const layered = {
  "src/contracts/shop/Api.ts": 'import { Money } from "./Money.js"\nexport const Api = { Money }\n',
  "src/contracts/shop/Money.ts": "export const Money = 1\n",
  "src/clients.ts": 'import { Api } from "./contracts/shop/Api.js"\nexport const client = Api\n',
  "src/services/platform/Db.ts": 'import { Money } from "../../contracts/shop/Money.js"\nexport const db = Money\n',
  "src/services/shop/Orders.ts": 'import { db } from "../platform/Db.js"\nexport const orders = db\n',
  "src/actors/OrderActor.ts": 'import { orders } from "../services/shop/Orders.js"\nexport const actor = orders\n',
  "src/http/shop/Http.ts":
    'import { actor } from "../../actors/OrderActor.js"\nimport { Api } from "../../contracts/shop/Api.js"\nexport const http = [actor, Api]\n',
  "src/layers/Live.ts": 'import { http } from "../http/shop/Http.js"\nexport const live = http\n',
  "src/cli/main.ts":
    'import { live } from "../layers/Live.js"\nimport { client } from "../clients.js"\nexport const main = [live, client]\n',
  "src/index.ts": 'export * from "./cli/main.js"\n'
}

describe("scripts/architecture-check.mjs", () => {
  it("passes a tree whose imports all point down, and reports its longest functions by their own lines", async () => {
    // `long` spans 104 lines of which a named 21-line helper is its own: 83 are long's.
    const root = tree({
      ...layered,
      "src/services/shop/Long.ts": [
        "export const long = () => {",
        lines(80),
        "  const helper = () => {",
        lines(19),
        "  }",
        "  return helper",
        "}",
        ""
      ].join("\n")
    })
    const run = await check(root)
    expect(run.code).toBe(0)
    expect(run.stdout).toContain("== imports that run up a layer")
    expect(run.stdout).toMatch(/up a layer \([^)]*\): 0\n/)
    expect(run.stdout).toContain("== import cycles: 0")
    expect(run.stdout).toMatch(/\n\s+83 own\s+104 span {2}long {2}src\/services\/shop\/Long\.ts:1\n/)
    expect(run.stdout).toMatch(/\n\s+21 own\s+21 span {2}long\.helper {2}src\/services\/shop\/Long\.ts:82\n/)
    expect(run.stdout).toContain("functions over 80 own lines: 1 (reported; --max-own-lines N makes it fatal)")
    expect(run.stdout).toContain("architecture check: ok")

    // The 80-line rule made fatal: 83 > 80 fails, and a limit above it passes.
    const strict = await check(root, "--max-own-lines", "80")
    expect(strict.code).toBe(1)
    expect(strict.stdout).toContain("architecture check: FAILED (1 function(s) over 80 own lines)")
    expect((await check(root, "--max-own-lines", "83")).code).toBe(0)
    fs.rmSync(root, { recursive: true, force: true })
  })

  it("fails an import up a layer, a type-only one too, and lets an allowed one through until it is gone", async () => {
    const root = tree({
      ...layered,
      // A contract reaching a service (the arrow issue 43 removes), and a service reaching an actor by type.
      "src/contracts/shop/Receipt.ts":
        'import { orders } from "../../services/shop/Orders.js"\nexport const r = orders\n',
      "src/services/shop/Refunds.ts":
        'import type { actor } from "../../actors/OrderActor.js"\nexport type R = typeof actor\n'
    })
    const run = await check(root)
    expect(run.code).toBe(1)
    expect(run.stdout).toContain(
      "src/contracts/shop/Receipt.ts -> src/services/shop/Orders.ts  (contracts -> services)"
    )
    expect(run.stdout).toContain("src/services/shop/Refunds.ts -> src/actors/OrderActor.ts  (services -> actors)")
    expect(run.stdout).toContain("architecture check: FAILED (2 upward import(s))")

    const allowing = [
      "--allow-arrow",
      "src/contracts/shop/Receipt.ts->src/services/shop/Orders.ts",
      "--allow-arrow",
      "src/services/shop/Refunds.ts->src/actors/OrderActor.ts"
    ]
    const allowed = await check(root, ...allowing)
    expect(allowed.code).toBe(0)
    expect(allowed.stdout).toContain("allowed for now: src/contracts/shop/Receipt.ts -> src/services/shop/Orders.ts")

    // Once the arrow is gone, its allowance is stale and fails the check.
    fs.rmSync(path.join(root, "src/contracts/shop/Receipt.ts"))
    const stale = await check(root, ...allowing)
    expect(stale.code).toBe(1)
    expect(stale.stdout).toContain(
      "allowed but gone (drop its --allow-arrow): src/contracts/shop/Receipt.ts->src/services/shop/Orders.ts"
    )
    fs.rmSync(root, { recursive: true, force: true })
  })

  it("holds the fleet's split: control and agent import nothing of each other, fleet/shared nothing of either", async () => {
    // The two programs meet in fleet/shared (a port); the layers compose the agent's adapter for the control plane.
    const fleet = {
      "src/services/fleet/shared/Model.ts": 'import { db } from "../../platform/Db.js"\nexport const model = db\n',
      "src/services/fleet/agent/Janitor.ts":
        'import { model } from "../shared/Model.js"\nexport const janitor = model\n',
      "src/services/fleet/control/Reconciler.ts":
        'import { model } from "../shared/Model.js"\nexport const r = [model]\n',
      "src/layers/Fleet.ts":
        'import { janitor } from "../services/fleet/agent/Janitor.js"\nimport { r } from "../services/fleet/control/Reconciler.js"\nexport const fleet = [janitor, r]\n'
    }
    const cleanRoot = tree({ ...layered, ...fleet })
    const clean = await check(cleanRoot)
    expect(clean.code).toBe(0)
    expect(clean.stdout).toContain(
      "== imports between the fleet's programs (control and agent meet only in fleet/shared): 0"
    )
    expect(clean.stdout).toContain("architecture check: ok")

    const brokenRoot = tree({
      ...layered,
      ...fleet,
      "src/services/fleet/agent/Publisher.ts":
        'import type { r } from "../control/Reconciler.js"\nexport type P = typeof r\n',
      "src/services/fleet/shared/Client.ts":
        'import { janitor } from "../agent/Janitor.js"\nexport const c = janitor\n',
      // Down a layer (services -> fleet-agent), yet across the programs: the control plane running agent code.
      "src/services/fleet/control/Handoff.ts":
        'import { janitor } from "../agent/Janitor.js"\nexport const h = janitor\n'
    })
    const run = await check(brokenRoot)
    expect(run.code).toBe(1)
    expect(run.stdout).toContain(
      "src/services/fleet/agent/Publisher.ts -> src/services/fleet/control/Reconciler.ts  (fleet-agent -> services)"
    )
    expect(run.stdout).toContain(
      "src/services/fleet/shared/Client.ts -> src/services/fleet/agent/Janitor.ts  (fleet-shared -> fleet-agent)"
    )
    expect(run.stdout).toContain(
      "== imports between the fleet's programs (control and agent meet only in fleet/shared): 2"
    )
    expect(run.stdout).toContain(
      "src/services/fleet/control/Handoff.ts -> src/services/fleet/agent/Janitor.ts  (control -> agent)"
    )
    expect(run.stdout).toContain(
      "src/services/fleet/agent/Publisher.ts -> src/services/fleet/control/Reconciler.ts  (agent -> control)"
    )
    expect(run.stdout).toContain(
      "architecture check: FAILED (2 upward import(s), 2 import(s) between control and agent)"
    )

    // Allowed by name like an upward arrow, until it is gone.
    const allowed = await check(
      brokenRoot,
      "--allow-arrow",
      "src/services/fleet/control/Handoff.ts->src/services/fleet/agent/Janitor.ts"
    )
    expect(allowed.stdout).toContain(
      "architecture check: FAILED (2 upward import(s), 1 import(s) between control and agent)"
    )
    for (const root of [cleanRoot, brokenRoot]) fs.rmSync(root, { recursive: true, force: true })
  })

  it("fails an import cycle, but not a lazy import() back to a module that imports it", async () => {
    const root = tree({
      ...layered,
      "src/services/shop/A.ts": 'import { b } from "./B.js"\nexport const a = () => b\n',
      "src/services/shop/B.ts": 'import { a } from "./A.js"\nexport const b = () => a\n',
      "src/cli/group.ts": 'export const run = () => import("./groupImpl.js")\n',
      "src/cli/groupImpl.ts": 'import { run } from "./group.js"\nexport const impl = run\n'
    })
    const run = await check(root)
    expect(run.code).toBe(1)
    expect(run.stdout).toContain("== import cycles: 1\nsrc/services/shop/A.ts <-> src/services/shop/B.ts\n")
    expect(run.stdout).toContain("architecture check: FAILED (1 import cycle(s))")
    fs.rmSync(root, { recursive: true, force: true })
  })
})
