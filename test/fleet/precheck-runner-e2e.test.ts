import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { type FakeGithub, startFakeGithub } from "../support/fake-github.js"
import { sshChannel, sshdAvailable, startSshd, type TestSshd } from "../support/sshd.js"

// Issue 20, "Done when": install, status and remove end to end against a real target — a host of its own (a network
// namespace this test creates, reached over ssh through a veth pair), a real runner account, the runner unit under
// the host's service manager (Keel's supervisor: systemd is not PID 1 here) and checked by systemd-analyze, the nft
// table applied in that namespace and enforced there, the archive a real tarball served over HTTP with its SHA-256
// pinned (a tampered one refused with nothing installed), GitHub a local server speaking its documented shapes.
// Every process's argv is watched while the lifecycle runs, and every line of output read: neither the registration
// token nor the signing secret appears.

const root = fileURLToPath(new URL("../..", import.meta.url))
const ctlBin = path.join(root, "bin", "ctl.js")
const has = (tool: string) => spawnSync("sh", ["-c", `command -v ${tool}`]).status === 0
const ready =
  process.getuid?.() === 0 &&
  sshdAvailable &&
  ["ip", "nft", "setpriv", "useradd", "curl", "tar", "systemd-analyze"].every(has) &&
  fs.existsSync(path.join(root, "dist", "src", "services", "fleet", "agent", "units", "SupervisorMain.js"))

const n = 100 + (process.pid % 150)
const netns = `keel-rt-${process.pid}`
const hostSide = `krh${process.pid % 100_000}`
const nsSide = `krn${process.pid % 100_000}`
// 198.18.0.0/15 (RFC 2544, benchmarking): a public-looking provider, as GitHub is: the runner may reach it.
const hostAddress = `198.18.${n}.1`
const nsAddress = `198.18.${n}.2`
const account = `keel-rt${process.pid % 100_000}`
const tamperedAccount = `keel-rx${process.pid % 100_000}`
const CREDENTIAL = `ghp_${"c".repeat(36)}`
const SIGNING_SECRET = `sig-${createHash("sha256").update(String(process.pid)).digest("hex")}`
const GATEWAY_PORT = 18787
const FORWARD_PORT = 18790

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-runner-e2e-"))
fs.chmodSync(dir, 0o755)
const supervisorDir = path.join(dir, "supervisor")

let sshd: (TestSshd & { readonly host: string }) | undefined
let github: FakeGithub | undefined
let archives: http.Server | undefined

const fixture = (file: string, text: string) => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, text, { mode: 0o755 })
}

/** A stand-in for actions/runner's archive: config.sh registers through the fake GitHub as the real one does. */
const buildArchive = () => {
  const tree = path.join(dir, "archive-tree")
  fixture(
    path.join(tree, "config.sh"),
    [
      "#!/bin/sh",
      "# Test fixture standing in for actions/runner's config.sh: the token comes from ACTIONS_RUNNER_INPUT_TOKEN only.",
      "set -eu",
      '[ "$(id -u)" != 0 ] || { echo "Must not run with sudo" >&2; exit 1; }',
      "here=$(pwd)",
      'if [ "$#" -gt 0 ] && [ "$1" = remove ]; then',
      `  name=$(sed -n 's/.*"name":"\\([^"]*\\)".*/\\1/p' "$here/.runner")`,
      `  base=$(sed -n 's/.*"base":"\\([^"]*\\)".*/\\1/p' "$here/.runner")`,
      `  printf '{"token":"%s","name":"%s"}' "$ACTIONS_RUNNER_INPUT_TOKEN" "$name" | curl -fsS -X DELETE -H 'Content-Type: application/json' --data-binary @- "$base/_fake/runners" >/dev/null || { echo "Failed: removing the runner from the server" >&2; exit 1; }`,
      '  rm -f "$here/.runner" "$here/.credentials" "$here/.credentials_rsaparams"',
      '  echo "Runner removed successfully"',
      "  exit 0",
      "fi",
      "url= name= group= labels=",
      'while [ $# -gt 0 ]; do case "$1" in --url) url=$2; shift 2;; --name) name=$2; shift 2;; --runnergroup) group=$2; shift 2;; --labels) labels=$2; shift 2;; *) shift;; esac; done',
      'base=$(dirname "$url")',
      `printf '{"token":"%s","name":"%s","labels":["%s"],"runner_group":"%s","os":"Linux","arch":"X64"}' "$ACTIONS_RUNNER_INPUT_TOKEN" "$name" "$labels" "$group" | curl -fsS -H 'Content-Type: application/json' --data-binary @- "$base/_fake/runners" >/dev/null || { echo "Http response code: Unauthorized" >&2; exit 1; }`,
      `printf '{"name":"%s","base":"%s"}\\n' "$name" "$base" > "$here/.runner"`,
      `echo '{"scheme":"OAuth"}' > "$here/.credentials"`,
      `echo '{}' > "$here/.credentials_rsaparams"`,
      "printf 'LANG=C.UTF-8\\n' > \"$here/.env\"",
      'printf "%s\\n" "$PATH" > "$here/.path"',
      'echo "Settings Saved."',
      ""
    ].join("\n")
  )
  fixture(
    path.join(tree, "run.sh"),
    [
      "#!/bin/sh",
      "# Test fixture standing in for the runner's run.sh: says who it runs as and with which hooks, then idles.",
      `printf 'uid=%s started=%s completed=%s\\n' "$(id -u)" "$ACTIONS_RUNNER_HOOK_JOB_STARTED" "$ACTIONS_RUNNER_HOOK_JOB_COMPLETED" > "$(pwd)/_diag/run.log"`,
      "while :; do sleep 1; done",
      ""
    ].join("\n")
  )
  fixture(path.join(tree, "bin", "Runner.Listener"), "#!/bin/sh\nexit 0\n")
  const archive = path.join(dir, "actions-runner-linux-x64-2.321.0.tar.gz")
  execFileSync("tar", ["-czf", archive, "-C", tree, "."])
  const tampered = path.join(dir, "tampered.tar.gz")
  fs.copyFileSync(archive, tampered)
  fs.appendFileSync(tampered, "tampered")
  return { archive, tampered, sha256: createHash("sha256").update(fs.readFileSync(archive)).digest("hex") }
}

const ipNetns = (...command: Array<string>) =>
  execFileSync("ip", ["netns", "exec", netns, ...command], { encoding: "utf8", timeout: 30_000 })

beforeAll(async () => {
  if (!ready) return
  execFileSync("ip", ["netns", "add", netns])
  execFileSync("ip", ["link", "add", hostSide, "type", "veth", "peer", "name", nsSide])
  execFileSync("ip", ["link", "set", nsSide, "netns", netns])
  execFileSync("ip", ["addr", "add", `${hostAddress}/30`, "dev", hostSide])
  execFileSync("ip", ["link", "set", hostSide, "up"])
  ipNetns("ip", "addr", "add", `${nsAddress}/30`, "dev", nsSide)
  ipNetns("ip", "link", "set", nsSide, "up")
  ipNetns("ip", "link", "set", "lo", "up")
  sshd = await startSshd({ address: nsAddress, netns, user: "root" })
  // The control plane reaches GitHub on loopback (the credential never crosses a network in clear); the runner
  // host's config.sh reaches it over the veth pair.
  github = await startFakeGithub({
    alsoOn: hostAddress,
    credential: CREDENTIAL,
    org: "acme",
    repositories: [
      { full_name: "acme/app", id: 101, private: true },
      { full_name: "acme/site", id: 102, private: false }
    ]
  })
  const built = buildArchive()
  archives = http.createServer((request, response) => {
    const file = request.url === "/tampered.tar.gz" ? built.tampered : built.archive
    response.writeHead(200, { "content-type": "application/gzip" })
    response.end(fs.readFileSync(file))
  })
  await new Promise<void>((resolve) => archives!.listen(0, hostAddress, resolve))
  sha256 = built.sha256
}, 180_000) // a bound on a hang: sshd's start is slow on a loaded machine

let sha256 = ""

afterAll(() => {
  for (const file of fs.existsSync(supervisorDir) ? fs.readdirSync(supervisorDir) : [])
    if (file.endsWith(".run.json")) {
      try {
        process.kill(JSON.parse(fs.readFileSync(path.join(supervisorDir, file), "utf8")).supervisor_pid, "SIGTERM")
      } catch {}
    }
  controlPlane?.kill("SIGTERM")
  forwarder?.kill("SIGTERM")
  sshd?.stop()
  github?.close()
  archives?.close()
  if (ready) {
    for (const name of [account, tamperedAccount]) {
      spawnSync("pkill", ["-KILL", "-u", name])
      spawnSync("userdel", [name])
    }
    spawnSync("ip", ["link", "del", hostSide])
    spawnSync("ip", ["netns", "del", netns])
  }
  fs.rmSync(dir, { recursive: true, force: true })
})

const archivePort = () => (archives!.address() as { port: number }).port

const writeRegistry = (
  file: string,
  overrides: { account: string; archivePath: string; root: string; repositories?: ReadonlyArray<string> }
) =>
  fs.writeFileSync(
    file,
    JSON.stringify({
      version: 1,
      actions: { "job-submit": ["gateway-runner-host"] },
      targets: [
        {
          name: "runner-host",
          os: "linux",
          channel: sshChannel(sshd!),
          binaries: [{ name: "ctl", path: ctlBin }],
          precheck_runner: {
            url: `${github!.alsoUrl}/acme`,
            api_url: github!.url,
            runner_group: "precheck",
            account: overrides.account,
            runner_root: overrides.root,
            unit_dir: path.join(dir, "units"),
            gateway_port: GATEWAY_PORT,
            archive: {
              version: "2.321.0",
              os: "linux",
              arch: "x64",
              sha256,
              url: `http://${hostAddress}:${archivePort()}${overrides.archivePath}`
            },
            credential: "github#token",
            signing_secret: "runner#signing_key",
            repositories: overrides.repositories ?? ["acme/app"],
            // The host reaches the control plane through a loopback forwarder (as through a tunnel).
            control_plane_url: `http://127.0.0.1:${FORWARD_PORT}`,
            gateway_jobs: [{ target: "runner-host", argv: ["echo", "precheck"] }]
          }
        }
      ]
    })
  )

/** Every argv seen while `run` ran: /proc/<pid>/cmdline of every process, polled. */
const watchingArgv = async <A>(run: () => Promise<A>) => {
  const seen = new Set<string>()
  const poll = () => {
    for (const pid of fs.readdirSync("/proc")) {
      if (!/^\d+$/.test(pid)) continue
      try {
        seen.add(fs.readFileSync(`/proc/${pid}/cmdline`, "utf8"))
      } catch {}
    }
  }
  const timer = setInterval(poll, 5)
  try {
    return { result: await run(), argv: [...seen] }
  } finally {
    clearInterval(timer)
  }
}

let controlPlane: ChildProcess | undefined
let forwarder: ChildProcess | undefined

describe.skipIf(!ready)("ctl host precheck-runner, end to end on a host of its own (needs root, ip, nft, sshd)", () => {
  const registry = path.join(dir, "registry.json")
  const runnerRoot = path.join(dir, "runner")
  const remoteEnv = () => ({
    KEEL_DATA_DIR: path.join(dir, "host-data"),
    KEEL_REGISTRY: registry,
    KEEL_SERVICE_MANAGER: "supervisor",
    KEEL_SUPERVISOR_DIR: supervisorDir,
    KEEL_LOG_LEVEL: "warning"
  })
  const env = () => ({
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? "/root",
    KEEL_DATA_DIR: path.join(dir, "control-data"),
    KEEL_REGISTRY: registry,
    KEEL_HOST: "control",
    KEEL_REMOTE_CTL: `env ${Object.entries(remoteEnv())
      .map(([k, v]) => `${k}=${v}`)
      .join(" ")} ${process.execPath} ${ctlBin}`,
    KEEL_DEMO_DATA: "false",
    KEEL_LOG_LEVEL: "info"
  })
  const output: Array<string> = []
  const ctl = (args: Array<string>, input?: string) =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [ctlBin, ...args], { env: env() })
      let stdout = ""
      let stderr = ""
      child.stdout!.on("data", (c: Buffer) => {
        stdout += c
      })
      child.stderr!.on("data", (c: Buffer) => {
        stderr += c
      })
      child.stdin!.end(input ?? "")
      child.on("exit", (status: number | null) => {
        output.push(stdout, stderr)
        resolve({ status, stdout, stderr })
      })
    })
  interface Answer {
    readonly ok: boolean
    readonly steps: ReadonlyArray<{ readonly step: string; readonly result: string; readonly detail: string }>
    readonly deviations: ReadonlyArray<string>
    readonly firewall: { readonly reasserted: boolean }
  }
  const answer = (run: { stdout: string }) => JSON.parse(run.stdout) as Answer

  beforeAll(async () => {
    writeRegistry(registry, { account, archivePath: "/actions-runner-linux-x64-2.321.0.tar.gz", root: runnerRoot })
    // The control plane, on the veth address; inside the host's namespace a loopback forwarder reaches it.
    controlPlane = spawn(process.execPath, [ctlBin, "serve", "--host", hostAddress, "--port", "0"], {
      env: { ...env(), KEEL_LOG_FORMAT: "json" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    const port = await new Promise<number>((resolve, reject) => {
      let output = ""
      // Only a guard against a server that hangs: a loaded machine has taken over 20 s to start one.
      const timer = setTimeout(() => reject(new Error(`the control plane did not start: ${output}`)), 120_000)
      const onData = (chunk: Buffer) => {
        output += chunk
        const match = /Listening on http:\/\/[0-9.]+:(\d+)/.exec(output)
        if (match) {
          clearTimeout(timer)
          resolve(Number(match[1]))
        }
      }
      controlPlane!.stdout!.on("data", onData)
      controlPlane!.stderr!.on("data", onData)
    })
    const forward = `require("net").createServer((a) => { const b = require("net").connect(${port}, "${hostAddress}"); a.pipe(b); b.pipe(a); a.on("error", () => b.destroy()); b.on("error", () => a.destroy()) }).listen(${FORWARD_PORT}, "127.0.0.1")`
    forwarder = spawn("ip", ["netns", "exec", netns, process.execPath, "-e", forward], { stdio: "ignore" })
    await ctl(["vault", "item", "put", "fleet-ssh"], JSON.stringify({ private_key: sshd!.clientKey }))
    await ctl(["vault", "item", "put", "github"], JSON.stringify({ token: CREDENTIAL }))
    await ctl(["vault", "item", "put", "runner"], JSON.stringify({ signing_key: SIGNING_SECRET }))
  }, 300_000) // a bound on a hang: the control plane and three ctl calls start, 10–20 s apiece when loaded

  it("refuses a tampered archive before anything is created", async () => {
    writeRegistry(registry, { account: tamperedAccount, archivePath: "/tampered.tar.gz", root: runnerRoot })
    const run = await ctl(["host", "precheck-runner", "install", "runner-host", "--json"])
    assert.strictEqual(run.status, 1, run.stderr)
    const report = answer(run)
    const archive = report.steps.find((s) => s.step === "archive")!
    assert.strictEqual(archive.result, "failed")
    assert.match(archive.detail, /is not the pinned .*nothing was installed/)
    assert.notInclude(
      report.steps.map((s: { step: string }) => s.step),
      "account"
    )
    assert.strictEqual(spawnSync("id", ["-u", tamperedAccount]).status, 1, "no account was created")
    assert.isFalse(fs.existsSync(runnerRoot), "no runner root was created")
  }, 120_000)

  it("installs, reports status, re-asserts the firewall and removes — no secret in any argv or output", async () => {
    writeRegistry(registry, { account, archivePath: "/actions-runner-linux-x64-2.321.0.tar.gz", root: runnerRoot })
    const { argv, result: install } = await watchingArgv(() =>
      ctl(["host", "precheck-runner", "install", "runner-host", "--json"])
    )
    assert.strictEqual(install.status, 0, `${install.stdout}\n${install.stderr}`)
    const report = answer(install)
    assert.isTrue(report.ok)
    const results = Object.fromEntries(report.steps.map((s: { step: string; result: string }) => [s.step, s.result]))
    assert.deepInclude(results, {
      repositories: "ok",
      "runner-group": "updated", // the refused install before created it: a group is provider configuration, not host state
      "registration-token": "ok",
      archive: "verified",
      account: "created",
      configure: "ok",
      hooks: "ok",
      secret: "ok",
      firewall: "applied",
      "firewall-readback": "ok",
      "gateway-grant": "ok",
      service: "created",
      "gateway-service": "created",
      labels: "ok",
      layout: "ok"
    })

    // The host: the account, the runner running as it with the hooks, the secret 0600 and its own.
    const uid = Number(execFileSync("id", ["-u", account], { encoding: "utf8" }).trim())
    const runLog = fs.readFileSync(path.join(runnerRoot, "app", "_diag", "run.log"), "utf8")
    assert.include(
      runLog,
      `uid=${uid} started=${runnerRoot}/hooks/job-started.sh completed=${runnerRoot}/hooks/job-completed.sh`
    )
    const secret = fs.statSync(path.join(runnerRoot, "request-signing.key"))
    assert.strictEqual(secret.mode & 0o777, 0o600)
    assert.strictEqual(secret.uid, uid)
    assert.strictEqual(fs.readFileSync(path.join(runnerRoot, "request-signing.key"), "utf8"), SIGNING_SECRET)
    assert.strictEqual(
      fs.readFileSync(path.join(runnerRoot, "gateway.url"), "utf8"),
      `http://127.0.0.1:${GATEWAY_PORT}\n`
    )
    assert.strictEqual(fs.readFileSync(path.join(runnerRoot, "agent.id"), "utf8"), "runner-host/runner-host\n")
    const unit = path.join(dir, "units", "keel-runner-runner-host.service")
    const verify = spawnSync("systemd-analyze", ["verify", unit], { encoding: "utf8" })
    assert.strictEqual(verify.status, 0, verify.stderr)
    assert.notMatch(verify.stderr, /keel-runner-runner-host\.service:\d+:/)

    // The provider: registered with the labels rule 5 names, in a group that grants exactly the listed repository.
    const registered = github!.runners().find((r) => r.name === "runner-host")
    assert.sameMembers([...registered!.labels], ["self-hosted", "Linux", "X64", "precheck"])
    const group = github!.groups().find((g) => g.name === "precheck")!
    assert.strictEqual(group.visibility, "selected")
    assert.isFalse(group.allows_public_repositories)
    assert.isFalse(group.restricted_to_workflows)
    assert.deepStrictEqual(group.repository_ids, [101])

    // The firewall, in the host's namespace: the runner's uid reaches the gateway port only (the gateway answers).
    const probe = path.join(dir, "probe.cjs")
    fs.writeFileSync(
      probe,
      `const net = require("net");
       Promise.all(process.argv.slice(2).map((port) => new Promise((done) => {
         const s = net.connect(Number(port), "127.0.0.1");
         s.setTimeout(3000, () => { s.destroy(); done(port + ":timeout") });
         s.on("connect", () => { s.destroy(); done(port + ":reachable") });
         s.on("error", (e) => done(port + ":" + e.code));
       }))).then((r) => console.log(r.join(" ")));`,
      { mode: 0o644 }
    )
    const listen = `require("net").createServer((s) => s.end()).listen(Number(process.argv[1]), "127.0.0.1")`
    const enforced = ipNetns(
      "sh",
      "-c",
      [
        // The gateway port is the installed gateway's own; a second loopback service listens beside it.
        `${process.execPath} -e '${listen}' 18788 & b=$!`,
        "sleep 1",
        `echo "runner $(setpriv --reuid=${uid} --regid=${uid} --clear-groups ${process.execPath} ${probe} ${GATEWAY_PORT} 18788)"`,
        'kill "$b"'
      ].join("\n")
    )
    assert.include(enforced, `runner ${GATEWAY_PORT}:reachable 18788:ECONNREFUSED`)

    // A job, as the runner's account, through the installed gateway: signed with the secret only it can read,
    // addressed by the files install published — the one private destination its firewall lets it reach.
    const client = path.join(dir, "client.cjs")
    fs.writeFileSync(
      client,
      `const crypto = require("crypto"), fs = require("fs");
       const root = process.argv[2];
       const secret = fs.readFileSync(root + "/request-signing.key", "utf8");
       const agent = fs.readFileSync(root + "/agent.id", "utf8").trim();
       const base = fs.readFileSync(root + "/gateway.url", "utf8").trim();
       const call = async (method, target, body) => {
         const timestamp = String(Math.floor(Date.now() / 1000)), nonce = crypto.randomBytes(16).toString("hex");
         const digest = crypto.createHash("sha256").update(body).digest("hex");
         const signature = crypto.createHmac("sha256", secret).update([agent, method, target, timestamp, nonce, digest].join("\\n")).digest("hex");
         const response = await fetch(base + target, { method, body: method === "POST" ? body : undefined,
           headers: { "content-type": "application/json", "x-keel-agent": agent, "x-keel-timestamp": timestamp, "x-keel-nonce": nonce, "x-keel-signature": signature } });
         return { status: response.status, body: await response.json() };
       };
       (async () => {
         const submitted = await call("POST", "/v1/jobs", JSON.stringify({ target: "runner-host", argv: ["echo", "precheck", "e2e"] }));
         const read = await call("GET", "/v1/jobs/" + submitted.body.id, "");
         console.log(JSON.stringify({ submitted, read }));
       })();`,
      { mode: 0o644 }
    )
    const viaGateway = JSON.parse(
      ipNetns("setpriv", `--reuid=${uid}`, `--regid=${uid}`, "--clear-groups", process.execPath, client, runnerRoot)
    ) as {
      submitted: { status: number; body: { kind: string } }
      read: { status: number; body: { job: { state: string } } }
    }
    assert.strictEqual(viaGateway.submitted.status, 202, JSON.stringify(viaGateway))
    assert.strictEqual(viaGateway.submitted.body.kind, "precheck")
    assert.strictEqual(viaGateway.read.status, 200)
    assert.strictEqual(viaGateway.read.body.job.state, "queued")
    const grantSecret = (
      JSON.parse(fs.readFileSync(path.join(runnerRoot, "gateway.grant"), "utf8")) as { secret: string }
    ).secret
    // The gateway's grant is root's: the runner's account cannot read it.
    assert.strictEqual(fs.statSync(path.join(runnerRoot, "gateway.grant")).mode & 0o777, 0o600)
    assert.notStrictEqual(
      spawnSync("setpriv", [
        `--reuid=${uid}`,
        `--regid=${uid}`,
        "--clear-groups",
        "cat",
        path.join(runnerRoot, "gateway.grant")
      ]).status,
      0
    )

    // Status: clean; a deviation is named (and the exit says so); a flushed table is re-asserted.
    const status = await ctl(["host", "precheck-runner", "status", "runner-host", "--json"])
    assert.strictEqual(status.status, 0, status.stdout)
    assert.deepStrictEqual(answer(status).deviations, [])
    fs.chmodSync(path.join(runnerRoot, "app", "bin"), 0o777)
    ipNetns("nft", "delete", "table", "inet", `keel_runner_${uid}`)
    const drifted = await ctl(["host", "precheck-runner", "status", "runner-host", "--json"])
    assert.strictEqual(drifted.status, 1)
    assert.include(answer(drifted).deviations.join("\n"), `${runnerRoot}/app/bin is writable by the runner account`)
    assert.isTrue(answer(drifted).firewall.reasserted)
    assert.strictEqual(
      spawnSync("ip", ["netns", "exec", netns, "nft", "list", "table", "inet", `keel_runner_${uid}`]).status,
      0
    )
    fs.chmodSync(path.join(runnerRoot, "app", "bin"), 0o755)

    // Remove: unregistered with a removal token, and every piece verified gone.
    const { argv: removeArgv, result: removed } = await watchingArgv(() =>
      ctl(["host", "precheck-runner", "remove", "runner-host", "--json"])
    )
    assert.strictEqual(removed.status, 0, `${removed.stdout}\n${removed.stderr}`)
    const removal = Object.fromEntries(
      answer(removed).steps.map((s: { step: string; result: string }) => [s.step, s.result])
    )
    assert.deepInclude(removal, {
      "removal-token": "ok",
      service: "removed",
      "gateway-service": "removed",
      "gateway-grant": "revoked",
      unregister: "removed",
      firewall: "removed",
      "drop-in": "removed",
      files: "removed",
      account: "removed",
      verify: "ok",
      provider: "ok"
    })
    assert.strictEqual(spawnSync("id", ["-u", account]).status, 1)
    assert.isFalse(fs.existsSync(runnerRoot))
    assert.isFalse(fs.existsSync(unit))
    assert.isUndefined(github!.runners().find((r) => r.name === "runner-host"))

    // No secret in any argv seen, nor in anything printed (ctl's output, the host's logs). The watch saw the
    // processes that handled them: the bootstrap shell and the runner's config.sh.
    assert.isTrue(
      argv.some((line) => line.includes("KEEL_SIGNING_SECRET")),
      "the bootstrap was seen"
    )
    assert.isTrue(
      argv.some((line) => line.includes("config.sh\0--unattended")),
      "config.sh was seen"
    )
    assert.isTrue(
      removeArgv.some((line) => line.includes("config.sh\0remove")),
      "config.sh remove was seen"
    )
    const tokens = github!.issuedTokens()
    assert.isAtLeast(tokens.length, 2)
    const logs = [
      ...output,
      ...fs.readdirSync(supervisorDir).map((f) => fs.readFileSync(path.join(supervisorDir, f), "utf8"))
    ]
    for (const secretValue of [...tokens, SIGNING_SECRET, CREDENTIAL, grantSecret]) {
      for (const line of [...argv, ...removeArgv]) assert.notInclude(line, secretValue)
      for (const text of logs) assert.notInclude(text, secretValue)
    }
  }, 240_000)

  it("admits a public repository only through repository-add; removes a runner the provider forgot", async () => {
    writeRegistry(registry, {
      account,
      archivePath: "/actions-runner-linux-x64-2.321.0.tar.gz",
      root: runnerRoot,
      repositories: ["acme/app", "acme/site"]
    })
    const refused = await ctl(["host", "precheck-runner", "install", "runner-host", "--json"])
    assert.strictEqual(refused.status, 1)
    const error = (JSON.parse(refused.stdout) as { error: { code: string; detail: string } }).error
    assert.strictEqual(error.code, "RUNNER_REFUSED")
    assert.include(error.detail, "public repositories are refused until admitted: acme/site")
    assert.isFalse(fs.existsSync(runnerRoot), "refused before the host was touched")

    const added = await ctl(["host", "precheck-runner", "repository-add", "acme/site", "--json"])
    assert.strictEqual(added.status, 0, added.stderr)
    const admission = JSON.parse(added.stdout) as { change: string; targets: Array<string>; guard: string }
    assert.strictEqual(admission.change, "added")
    assert.deepStrictEqual(admission.targets, ["runner-host"])
    assert.include(admission.guard, "github.event.pull_request.head.repo.full_name == github.repository")
    assert.include(admission.guard, "runs-on: [self-hosted, Linux, X64, precheck]")
    assert.include(fs.readFileSync(registry, "utf8"), "acme/site")
    const again = await ctl(["host", "precheck-runner", "repository-add", "acme/site", "--json"])
    assert.strictEqual((JSON.parse(again.stdout) as { change: string }).change, "unchanged")

    const install = await ctl(["host", "precheck-runner", "install", "runner-host", "--json"])
    assert.strictEqual(install.status, 0, install.stdout)
    const group = github!.groups().find((g) => g.name === "precheck")!
    assert.isTrue(group.allows_public_repositories)
    assert.sameMembers(group.repository_ids, [101, 102])

    // Installing again converges: the same pinned archive stays in place, the runner registers again.
    const again2 = await ctl(["host", "precheck-runner", "install", "runner-host", "--json"])
    assert.strictEqual(again2.status, 0, again2.stdout)
    const steps2 = Object.fromEntries(answer(again2).steps.map((s) => [s.step, s.result]))
    assert.deepInclude(steps2, { account: "present", extract: "present", configure: "ok", layout: "ok" })
    github!.removeRunnerSilently("runner-host")
    const removed = await ctl(["host", "precheck-runner", "remove", "runner-host", "--json"])
    const steps = answer(removed).steps as Array<{ step: string; result: string; detail: string }>
    assert.strictEqual(steps.find((s) => s.step === "unregister")?.result, "failed")
    assert.deepInclude(steps, { step: "provider", result: "absent", detail: "the provider no longer knows the runner" })
    assert.strictEqual(steps.find((s) => s.step === "verify")?.result, "ok")
    assert.strictEqual(spawnSync("id", ["-u", account]).status, 1)
  }, 240_000)

  it("rolls back what a failed install created, and says what remains", async () => {
    // The provider refuses the runner's own registration: the install fails after the account and files exist.
    github!.failNext("/_fake/runners", { status: 401, body: { message: "Bad credentials" }, method: "POST" })
    const run = await ctl(["host", "precheck-runner", "install", "runner-host", "--json"])
    assert.strictEqual(run.status, 1)
    const report = JSON.parse(run.stdout) as {
      ok: boolean
      steps: Array<{ step: string; result: string }>
      rollback: Array<{ step: string; result: string }>
      remains: Array<string>
    }
    assert.isFalse(report.ok)
    assert.strictEqual(report.steps.find((s) => s.step === "account")?.result, "created")
    assert.strictEqual(report.steps.find((s) => s.step === "configure")?.result, "failed")
    const undone = Object.fromEntries(report.rollback.map((s) => [s.step, s.result]))
    assert.deepInclude(undone, { files: "removed", account: "removed", verify: "ok" })
    assert.deepStrictEqual(report.remains, [])
    assert.strictEqual(spawnSync("id", ["-u", account]).status, 1)
    assert.isFalse(fs.existsSync(runnerRoot))
  }, 240_000)
})
