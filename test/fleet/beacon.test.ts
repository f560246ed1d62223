import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { beaconDocument } from "../support/controlplane.js"
import { HttpTest } from "../support/http.js"
import {
  type BeaconRouting,
  beaconKey,
  beaconRouting,
  beaconUnitProblem,
  type FleetConfig,
  HostHealth,
  ObjectGateway,
  parsePlist,
  publishBeacon,
  renderEnvFile,
  renderLaunchd,
  renderSystemd,
  Vault
} from "../support/keel.js"
import { call, serverPort } from "../support/market.js"
import { runCtlOk } from "../support/server.js"

const root = fileURLToPath(new URL("../..", import.meta.url))
const registryFile = path.join(root, "examples", "registry.yml")
const work = fs.mkdtempSync(path.join(os.tmpdir(), "keel-beacon-"))

const beacon = beaconDocument

const writeJson = (name: string, value: unknown, mode = 0o600) => {
  const file = path.join(work, name)
  fs.rmSync(file, { force: true })
  fs.writeFileSync(file, JSON.stringify(value), { mode })
  fs.chmodSync(file, mode)
  return file
}

/** A grant credential file for `hosts`/`actions`, written owner-only unless told otherwise. */
const grantFile = (name: string, grant: { actions: Array<string>; hosts: Array<string> }, mode = 0o600) =>
  Effect.gen(function* () {
    const { credential } = yield* (yield* Vault).createGrant({
      consumer: "beacon-forge-1",
      actions: grant.actions,
      items: [],
      hosts: grant.hosts,
      ttlMillis: 3_600_000
    })
    return { file: writeJson(name, credential, mode), credential }
  }).pipe(Effect.orDie)

const storedBytes = Effect.gen(function* () {
  const object = yield* (yield* ObjectGateway).get(beaconKey("forge-1")).pipe(Effect.orDie)
  return Option.map(object, (o) => Buffer.from(o.bytes).toString("utf8"))
})

const failureOf = <A, E extends { readonly _tag: string }, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(effect), (error) => error as E & { reason?: string; detail?: string })

layer(HttpTest({ surfaces: ["controlplane", "vault"], env: { KEEL_REGISTRY: registryFile } }), {
  timeout: "60 seconds",
  excludeTestServices: true
})("host-health beacons", (it) => {
  it.effect("an unreachable server is named with its port (even the scheme's default) and the system's reason", () =>
    Effect.gen(function* () {
      const local = `http://127.0.0.1:${yield* serverPort}`
      const good = yield* grantFile("reach.json", { actions: ["host-health-write"], hosts: ["forge-1"] })
      const next = writeJson("reach-beacon.json", beacon("forge-1", "2026-11-23T10:30:00.000Z"), 0o644)
      const routing: BeaconRouting = {
        controlPlaneUrl: local,
        vaultUrl: local,
        consumer: "beacon-forge-1",
        grantFile: good.file
      }
      // Nothing listens on port 80 of the loopback here: `http://127.0.0.1` and `http://127.0.0.1:80` are the same.
      for (const [spelled, changed] of [
        ["http://127.0.0.1", { controlPlaneUrl: "http://127.0.0.1" }],
        ["http://127.0.0.1:80/", { controlPlaneUrl: "http://127.0.0.1:80/" }],
        ["http://127.0.0.1 (vault)", { vaultUrl: "http://127.0.0.1" }]
      ] as const) {
        const failure = yield* failureOf(publishBeacon(next, { ...routing, ...changed }))
        assert.strictEqual(failure.reason, "backend_error", spelled)
        assert.match(failure.detail ?? "", /^cannot reach http:\/\/127\.0\.0\.1:80 \(connect ECONNREFUSED /, spelled)
        assert.include(failure.detail, "ECONNREFUSED", spelled)
      }
    })
  )

  it.effect("publish-beacon stores the beacon; each failure leaves the stored bytes exactly as they were", () =>
    Effect.gen(function* () {
      const port = yield* serverPort
      const local = `http://127.0.0.1:${port}`
      const good = yield* grantFile("good.json", { actions: ["host-health-write"], hosts: ["forge-1"] })
      const routing: BeaconRouting = {
        controlPlaneUrl: local,
        vaultUrl: local,
        consumer: "beacon-forge-1",
        grantFile: good.file
      }
      const first = writeJson("first.json", beacon("forge-1", "2026-11-23T10:00:00.000Z"), 0o644)
      const stored = yield* publishBeacon(first, routing)
      assert.strictEqual(stored.key, "host_health/forge-1.json")
      assert.strictEqual(stored.reported_at, "2026-11-23T10:00:00.000Z")
      const before = yield* storedBytes
      assert.isTrue(Option.isSome(before))
      assert.strictEqual(JSON.parse(Option.getOrThrow(before)).reported_at, "2026-11-23T10:00:00.000Z")

      const next = writeJson("next.json", beacon("forge-1", "2026-11-23T11:00:00.000Z"), 0o644)
      const cases: Array<[string, Effect.Effect<unknown, { readonly _tag: string }, Vault | FleetConfig>]> = [
        ["routing_missing", beaconRouting(Option.none()).pipe(Effect.flatMap((r) => publishBeacon(next, r)))],
        ["grant_unreadable", publishBeacon(next, { ...routing, grantFile: path.join(work, "absent.json") })],
        [
          "grant_not_owner_only",
          Effect.flatMap(grantFile("open.json", { actions: ["host-health-write"], hosts: ["forge-1"] }, 0o644), (g) =>
            publishBeacon(next, { ...routing, grantFile: g.file })
          )
        ],
        [
          "grant_over_broad",
          Effect.flatMap(
            grantFile("broad.json", { actions: ["host-health-write", "storage-reconcile-apply"], hosts: ["forge-1"] }),
            (g) => publishBeacon(next, { ...routing, grantFile: g.file })
          )
        ],
        [
          "grant_over_broad",
          // The file hides its scope: the vault's answer still shows the grant covers two hosts.
          Effect.flatMap(
            grantFile("hidden.json", { actions: ["host-health-write"], hosts: ["forge-1", "forge-2"] }),
            (g) =>
              publishBeacon(next, {
                ...routing,
                grantFile: writeJson("hidden-scope.json", { ...g.credential, scope: undefined })
              })
          )
        ],
        [
          "grant_wrong_host",
          // Another host's grant is named as such, not as an over-broad one.
          Effect.flatMap(grantFile("other-host.json", { actions: ["host-health-write"], hosts: ["forge-2"] }), (g) =>
            publishBeacon(next, { ...routing, grantFile: g.file })
          )
        ],
        ["insecure_url", publishBeacon(next, { ...routing, controlPlaneUrl: `http://10.0.0.1:${port}` })],
        [
          "vault_refused",
          publishBeacon(next, {
            ...routing,
            grantFile: writeJson("forged.json", { ...good.credential, secret: "not-the-secret" })
          })
        ],
        [
          "control_plane_refused",
          // Older than what is stored: the control plane refuses to roll state back (409).
          publishBeacon(writeJson("old.json", beacon("forge-1", "2026-11-23T09:00:00.000Z"), 0o644), routing)
        ],
        ["backend_error", publishBeacon(next, { ...routing, controlPlaneUrl: "http://127.0.0.1:9" })]
      ]
      for (const [reason, attempt] of cases) {
        const failure = yield* failureOf(attempt)
        assert.strictEqual(failure._tag, "BeaconPublishFailed", reason)
        assert.strictEqual(failure.reason, reason, failure.detail)
        assert.deepStrictEqual(yield* storedBytes, before, `${reason} changed the stored beacon`)
      }
      // An invalid beacon file is refused field by field, as the control plane would (never a schema dump).
      for (const [change, field] of [
        [{ reported_at: "2026-02-30T10:00:00Z" }, "reported_at"],
        [{ host: 5 }, "host"],
        [{ surprise: true }, "surprise"]
      ] as const) {
        const bad = writeJson("bad.json", { ...beacon("forge-1", "2026-11-23T11:00:00.000Z"), ...change }, 0o644)
        const refusal = yield* failureOf(publishBeacon(bad, routing))
        assert.strictEqual(refusal.reason, "beacon_invalid", field)
        assert.match(refusal.detail, new RegExp(`is not a valid beacon: ${field}: `), field)
        assert.notInclude(refusal.detail, "readonly", field)
      }
      const revoked = yield* grantFile("revoked.json", { actions: ["host-health-write"], hosts: ["forge-1"] })
      yield* (yield* Vault).revokeGrant(revoked.credential.grant_id)
      const refused = yield* failureOf(publishBeacon(next, { ...routing, grantFile: revoked.file }))
      assert.strictEqual(refused.reason, "vault_refused")
      assert.deepStrictEqual(yield* storedBytes, before)

      const newer = yield* publishBeacon(next, routing)
      assert.strictEqual(newer.reported_at, "2026-11-23T11:00:00.000Z")
    })
  )

  it.effect(
    "PUT /api/host-health: 401 without a token, 403 for another host's token, 400 invalid or unknown host",
    () =>
      Effect.gen(function* () {
        const vault = yield* Vault
        const grant = yield* vault.createGrant({
          consumer: "beacon-forge-2",
          actions: ["host-health-write"],
          items: [],
          hosts: ["forge-2"],
          ttlMillis: 3_600_000
        })
        const { token } = yield* vault.exchange(grant.credential)
        const body = beacon("forge-1", "2026-11-23T12:00:00.000Z")
        assert.strictEqual((yield* call("POST", "/api/host-health", { body })).status, 404) // PUT only
        const put = (options: { bearer?: string; body: unknown }) =>
          Effect.gen(function* () {
            const { HttpClient, HttpClientRequest } = yield* Effect.promise(() => import("@effect/platform"))
            const client = yield* HttpClient.HttpClient
            const response = yield* client.execute(
              HttpClientRequest.put("/api/host-health").pipe(
                HttpClientRequest.setHeaders(options.bearer ? { authorization: `Bearer ${options.bearer}` } : {}),
                HttpClientRequest.bodyUnsafeJson(options.body)
              )
            )
            return { status: response.status, body: (yield* response.json) as { code: string; detail: string } }
          }).pipe(Effect.scoped, Effect.orDie)
        assert.strictEqual((yield* put({ body })).status, 401)
        // The contract describes the body as a beacon but does not decode it at the edge: the token first, whatever
        // the body, then the beacon's own rules (BEACON_INVALID naming the field), never VALIDATION_FAILED.
        assert.strictEqual((yield* put({ body: { host: 7 } })).status, 401)
        const excess = yield* put({
          bearer: token,
          body: { ...beacon("forge-2", "2026-11-23T12:00:00.000Z"), extra: 1 }
        })
        assert.strictEqual(excess.status, 400)
        assert.strictEqual(excess.body.code, "BEACON_INVALID")
        assert.match(excess.body.detail, /^extra: /)
        const otherHost = yield* put({ bearer: token, body })
        assert.strictEqual(otherHost.status, 403)
        assert.strictEqual(otherHost.body.code, "VAULT_FORBIDDEN")
        const invalid = yield* put({ bearer: token, body: { ...beacon("forge-2", "yesterday") } })
        assert.strictEqual(invalid.status, 400)
        assert.strictEqual(invalid.body.code, "BEACON_INVALID")
        // The shape of a timestamp but no instant: it would skip the skew check and the rollback guard.
        for (const impossible of ["2026-11-27T99:00:00Z", "2026-02-30T10:00:00Z", "2026-11-27T23:59:60Z"]) {
          const refused = yield* put({ bearer: token, body: beacon("forge-2", impossible) })
          assert.strictEqual(refused.status, 400, impossible)
          assert.strictEqual(refused.body.code, "BEACON_INVALID", impossible)
        }
        const ghost = yield* vault.createGrant({
          consumer: "beacon-forge-1",
          actions: ["host-health-write"],
          items: [],
          hosts: ["ghost"],
          ttlMillis: 3_600_000
        })
        const ghostToken = (yield* vault.exchange(ghost.credential)).token
        const unknown = yield* put({ bearer: ghostToken, body: beacon("ghost", "2026-11-23T12:00:00.000Z") })
        assert.strictEqual(unknown.status, 400)
        assert.strictEqual(unknown.body.code, "UNKNOWN_HOST")
        // A grant that carries the action is not enough: the registry must list its consumer under it.
        const stranger = yield* vault.createGrant({
          consumer: "beacon-stranger",
          actions: ["host-health-write"],
          items: [],
          hosts: ["forge-2"],
          ttlMillis: 3_600_000
        })
        const strangerToken = (yield* vault.exchange(stranger.credential)).token
        const notHeld = yield* put({ bearer: strangerToken, body: beacon("forge-2", "2026-11-23T12:00:00.000Z") })
        assert.strictEqual(notHeld.status, 403)
        assert.strictEqual(notHeld.body.code, "ACTION_NOT_HELD")
        const ok = yield* put({ bearer: token, body: beacon("forge-2", "2026-11-23T12:00:00.000Z") })
        assert.strictEqual(ok.status, 200)
      })
  )

  it.effect(
    "a beacon from the future, of the wrong os or with undeclared mounts is refused; an operator clears a bad stored one",
    () =>
      Effect.gen(function* () {
        const vault = yield* Vault
        const grant = yield* vault.createGrant({
          consumer: "beacon-forge-2",
          actions: ["host-health-write"],
          items: [],
          hosts: ["forge-2"],
          ttlMillis: 3_600_000
        })
        const { token } = yield* vault.exchange(grant.credential)
        const put = (body: unknown) =>
          Effect.gen(function* () {
            const { HttpClient, HttpClientRequest } = yield* Effect.promise(() => import("@effect/platform"))
            const response = yield* (yield* HttpClient.HttpClient).execute(
              HttpClientRequest.put("/api/host-health").pipe(
                HttpClientRequest.setHeaders({ authorization: `Bearer ${token}` }),
                HttpClientRequest.bodyUnsafeJson(body)
              )
            )
            return { status: response.status, body: (yield* response.json) as { code: string; detail: string } }
          }).pipe(Effect.scoped, Effect.orDie)
        const at = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString()
        const future = yield* put(beacon("forge-2", at(3_600_000)))
        assert.strictEqual(future.status, 400)
        assert.match(future.body.detail, /^reported_at: .* ahead of the control plane's clock/)
        // Within the documented skew (5 min) a fast clock is fine.
        assert.strictEqual((yield* put(beacon("forge-2", at(60_000)))).status, 200)
        const wrongOs = yield* put({ ...beacon("forge-2", at(61_000)), os: "darwin" })
        assert.strictEqual(wrongOs.status, 400)
        assert.match(wrongOs.body.detail, /^os: darwin is not the registry's linux/)
        const mounts = yield* put({
          ...beacon("forge-2", at(62_000)),
          disks: [{ mount: "/mnt/undeclared", total_bytes: 1, free_bytes: 1, available_bytes: 1, error: null }]
        })
        assert.strictEqual(mounts.status, 400)
        assert.match(mounts.body.detail, /^disks\.0\.mount: \/mnt\/undeclared is not a declared mount of forge-2/)
        const disk = { mount: "/", total_bytes: 1, free_bytes: 1, available_bytes: 1, error: null }
        const twice = yield* put({ ...beacon("forge-2", at(62_500)), disks: [disk, disk] })
        assert.strictEqual(twice.status, 400)
        assert.match(twice.body.detail, /^disks\.1\.mount: \/ is listed twice/)

        // A future-dated beacon stored before the check: honest beacons are not refused forever.
        const objects = yield* ObjectGateway
        yield* objects.putJson(beaconKey("forge-2"), beacon("forge-2", "2030-01-01T00:00:00.000Z"))
        assert.strictEqual((yield* put(beacon("forge-2", at(0)))).status, 200)
        // And an operator can clear a stored beacon outright (ctl host beacon clear forge-2).
        yield* objects.putJson(beaconKey("forge-2"), beacon("forge-2", at(120_000)))
        assert.strictEqual((yield* put(beacon("forge-2", at(0)))).status, 409)
        assert.isTrue(yield* (yield* HostHealth).clear("forge-2"))
        assert.strictEqual((yield* put(beacon("forge-2", at(0)))).status, 200)
      })
  )
})

describe("beacon units", () => {
  const options = {
    ctl: [process.execPath, path.join(root, "bin", "ctl.js")],
    beaconFile: "/var/lib/keel/beacon.json",
    envFile: path.join(work, "beacon.env"),
    intervalSeconds: 300,
    routing: {
      controlPlaneUrl: "https://control.example.internal",
      vaultUrl: "https://vault.example.internal",
      consumer: "beacon-forge-1",
      grantFile: "/etc/keel/beacon-grant.json"
    }
  }

  it("the rendered systemd service and timer pass systemd-analyze verify", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-units-"))
    fs.writeFileSync(options.envFile, renderEnvFile(options))
    for (const [name, text] of Object.entries(renderSystemd(options))) fs.writeFileSync(path.join(dir, name), text)
    const verify = spawnSync(
      "systemd-analyze",
      ["verify", path.join(dir, "keel-beacon.service"), path.join(dir, "keel-beacon.timer")],
      { encoding: "utf8" }
    )
    assert.strictEqual(verify.status, 0, verify.stderr)
    assert.strictEqual(verify.stderr.trim(), "")
    // Routing only: the four origins and grant metadata, no credential value.
    assert.deepStrictEqual(
      renderEnvFile(options)
        .split("\n")
        .filter((line) => line.includes("="))
        .map((line) => line.slice(0, line.indexOf("="))),
      ["KEEL_CONTROL_PLANE_URL", "KEEL_VAULT_URL", "KEEL_BEACON_CONSUMER", "KEEL_BEACON_GRANT_FILE"]
    )
  })

  it("units run on their own: ctl's settings in the env file, an account, hardening; a newline never injects", () => {
    const own = {
      ...options,
      user: "root",
      environment: {
        KEEL_REGISTRY: "/etc/keel/registry.yml",
        KEEL_DATA_DIR: "/var/lib/keel/data",
        KEEL_HOST: "forge-1"
      }
    }
    const env = renderEnvFile(own)
    assert.include(
      env,
      'KEEL_REGISTRY="/etc/keel/registry.yml"\nKEEL_DATA_DIR="/var/lib/keel/data"\nKEEL_HOST="forge-1"\n'
    )
    const service = renderSystemd(own)["keel-beacon.service"]
    for (const line of [
      "User=root",
      "Group=root",
      "NoNewPrivileges=yes",
      "PrivateTmp=yes",
      "ProtectSystem=strict",
      "ReadWritePaths=/var/lib/keel /var/lib/keel/data"
    ])
      assert.include(service, `${line}\n`)
    assert.include(renderSystemd(options)["keel-beacon.service"], "User=keel\n")
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-units-own-"))
    fs.writeFileSync(
      path.join(dir, "keel-beacon.service"),
      service.replace(`EnvironmentFile=${own.envFile}`, `EnvironmentFile=${path.join(dir, "beacon.env")}`)
    )
    fs.writeFileSync(path.join(dir, "beacon.env"), env)
    const verify = spawnSync("systemd-analyze", ["verify", path.join(dir, "keel-beacon.service")], { encoding: "utf8" })
    assert.strictEqual(verify.status, 0, verify.stderr)
    assert.match(
      beaconUnitProblem({ ...own, routing: { ...own.routing, consumer: "beacon-x\nKEEL_VAULT_KEY=stolen" } }) ?? "",
      /one line/
    )
    assert.match(beaconUnitProblem({ ...own, user: "root\nExecStartPre=/bin/sh" }) ?? "", /account name/)
    assert.match(beaconUnitProblem({ ...own, ctl: ["ctl\nExecStartPre=/bin/evil"] }) ?? "", /one line/)
    // With a state grant, each run also publishes the host's capacity and janitor report (issue 15).
    const withState = { ...own, routing: { ...own.routing, stateGrantFile: "/etc/keel/state-grant.json" } }
    const execs = renderSystemd(withState)
      ["keel-beacon.service"].split("\n")
      .filter((l) => l.startsWith("ExecStart="))
    assert.lengthOf(execs, 3)
    assert.match(execs[2]!, / host publish-state$/)
    assert.include(renderEnvFile(withState), 'KEEL_STATE_GRANT_FILE="/etc/keel/state-grant.json"\n')
    assert.include(
      renderLaunchd(withState)["dev.keel.beacon.plist"],
      "publish-beacon /var/lib/keel/beacon.json &amp;&amp; "
    )
    assert.lengthOf(
      renderSystemd(own)
        ["keel-beacon.service"].split("\n")
        .filter((l) => l.startsWith("ExecStart=")),
      2,
      "without a state grant the units publish the beacon only"
    )
    const plist = parsePlist(renderLaunchd(own)["dev.keel.beacon.plist"]) as {
      UserName: string
      EnvironmentVariables: Record<string, string>
    }
    assert.strictEqual(plist.UserName, "root")
    assert.strictEqual(plist.EnvironmentVariables.KEEL_DATA_DIR, "/var/lib/keel/data")
  })

  it("the rendered service runs once under systemd-run (where systemd is the init system)", (context) => {
    if (!fs.readFileSync("/proc/1/comm", "utf8").startsWith("systemd")) {
      context.skip("systemd is not PID 1 on this machine (a container): systemd-run cannot start a transient unit")
      return
    }
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-units-run-"))
    const data = path.join(dir, "data")
    fs.mkdirSync(data)
    const env = {
      KEEL_REGISTRY: path.join(root, "examples", "registry.yml"),
      KEEL_DATA_DIR: data,
      KEEL_HOST: "forge-1"
    }
    const run = spawnSync(
      "systemd-run",
      [
        "--wait",
        "--collect",
        "--quiet",
        "-p",
        "NoNewPrivileges=yes",
        "-p",
        "PrivateTmp=yes",
        "-p",
        "ProtectSystem=strict",
        "-p",
        `ReadWritePaths=${dir}`,
        ...Object.entries(env).flatMap(([k, v]) => ["--setenv", `${k}=${v}`]),
        process.execPath,
        path.join(root, "bin", "ctl.js"),
        "host",
        "beacon",
        "write",
        "--out",
        path.join(dir, "beacon.json")
      ],
      { encoding: "utf8" }
    )
    assert.strictEqual(run.status, 0, run.stderr)
    assert.isTrue(fs.existsSync(path.join(dir, "beacon.json")))
  })

  it("the rendered launchd plist is a well-formed property list with the same routing", () => {
    const plist = parsePlist(renderLaunchd(options)["dev.keel.beacon.plist"]) as Record<string, never>
    assert.strictEqual(plist.Label, "dev.keel.beacon")
    assert.deepStrictEqual(plist.EnvironmentVariables, {
      KEEL_CONTROL_PLANE_URL: "https://control.example.internal",
      KEEL_VAULT_URL: "https://vault.example.internal",
      KEEL_BEACON_CONSUMER: "beacon-forge-1",
      KEEL_BEACON_GRANT_FILE: "/etc/keel/beacon-grant.json"
    })
    assert.strictEqual(plist.StartInterval, 300)
    assert.throws(() => parsePlist('<plist version="1.0"><dict><key>a</key></dict></plist>'))
    assert.throws(() => parsePlist('<plist version="1.0"><dict><string>a</string></dict></plist>'))
    assert.throws(() => parsePlist('<plist version="1.0"><dict></plist>'))
  })
})

describe("a beacon end to end, through real ctl processes", () => {
  it("grant with ctl vault, write and publish with ctl host, read host_health/<host>.json back", async () => {
    const dataDir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-beacon-e2e-")), "data")
    const env = {
      ...process.env,
      KEEL_DATA_DIR: dataDir,
      KEEL_REGISTRY: registryFile,
      KEEL_DEMO_DATA: "false",
      KEEL_LOG_LEVEL: "info",
      KEEL_LOG_FORMAT: "json"
    }
    const ctlBin = path.join(root, "bin", "ctl.js")
    const { spawn } = await import("node:child_process")
    const server = spawn(process.execPath, [ctlBin, "serve", "--port", "0"], { env, stdio: ["ignore", "pipe", "pipe"] })
    try {
      const port = await new Promise<number>((resolve, reject) => {
        let output = ""
        // Only a guard against a server that hangs: a loaded machine has taken over 20 s to start one.
        const timer = setTimeout(() => reject(new Error(output)), 120_000)
        const onData = (chunk: Buffer) => {
          output += chunk.toString()
          const match = /Listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(output)
          if (match) {
            clearTimeout(timer)
            resolve(Number(match[1]))
          }
        }
        server.stdout.on("data", onData)
        server.stderr.on("data", onData)
      })
      const ctl = (args: Array<string>, extra: Record<string, string> = {}) => runCtlOk(args, { ...env, ...extra })
      const grant = path.join(dataDir, "..", "grant.json")
      await ctl([
        "vault",
        "grant",
        "create",
        "--consumer",
        "beacon-forge-1",
        "--action",
        "host-health-write",
        "--host",
        "forge-1",
        "--out",
        grant
      ])
      const beaconFile = path.join(dataDir, "..", "beacon.json")
      await ctl(["host", "beacon", "write", "--host", "forge-1", "--out", beaconFile])
      const routing = path.join(dataDir, "..", "routing.env")
      fs.writeFileSync(
        routing,
        `KEEL_CONTROL_PLANE_URL=http://127.0.0.1:${port}\nKEEL_VAULT_URL=http://127.0.0.1:${port}\nKEEL_BEACON_CONSUMER=beacon-forge-1\nKEEL_BEACON_GRANT_FILE=${grant}\n`
      )
      const published = JSON.parse(
        await ctl(["host", "publish-beacon", beaconFile, "--routing-file", routing, "--json"])
      )
      assert.strictEqual(published.key, "host_health/forge-1.json")
      const stored = JSON.parse(fs.readFileSync(path.join(dataDir, "objects", "host_health", "forge-1.json"), "utf8"))
      const written = JSON.parse(fs.readFileSync(beaconFile, "utf8"))
      assert.deepStrictEqual(stored, written)
      assert.strictEqual(stored.disks[0].mount, "/")
      assert.isAbove(stored.disks[0].total_bytes, 0)
      assert.deepStrictEqual(
        stored.units.map((u: { name: string }) => u.name),
        ["keel-api", "keel-beacon", "keel-disk-cleanup"]
      )
    } finally {
      server.kill("SIGTERM")
    }
    // A bound on a hang: the server's start and each ctl call take 10–20 s on a loaded machine.
  }, 300_000)
})
