import { execFileSync, spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Schema } from "effect"
import { afterAll, assert, describe, it } from "vitest"
import {
  BOOTSTRAP,
  bootstrapInput,
  FleetRegistryDocument,
  firewallProblems,
  installScript,
  layoutDeviations,
  parseScriptOutput,
  parseStats,
  prepareScript,
  removeScript,
  renderHooksDropIn,
  renderJobHook,
  renderLaunchDaemon,
  renderNftTable,
  renderSudoers,
  renderSystemdUnit,
  renderWorkflowGuard,
  runnerLayout,
  statusScript,
  sudoersProblem
} from "../support/keel.js"

// Issue 20, pre-check runner rules 1, 2, 4, 6: what the lifecycle renders — the unit and its hooks drop-in (checked by
// systemd-analyze), the LaunchDaemon, the job hooks (run for real as an account of their own), the scripts that carry
// the secrets on stdin (parsed by sh -n, and the bootstrap proven to keep them out of argv), the sudoers drop-in
// (visudo -c), the workflow guard — and the status rules that judge a host's layout and firewall.

const has = (tool: string) => spawnSync("sh", ["-c", `command -v ${tool}`]).status === 0
const isRoot = process.getuid?.() === 0

const registry = Schema.decodeUnknownSync(FleetRegistryDocument)({
  version: 1,
  targets: [
    {
      name: "ci-1",
      os: "linux",
      channel: "local",
      precheck_runner: {
        url: "https://github.com/acme",
        runner_group: "precheck",
        runner_root: "/opt/keel-runner",
        archive: {
          version: "2.321.0",
          os: "linux",
          arch: "x64",
          sha256: "a".repeat(64),
          url: "https://github.com/actions/runner/releases/download/v2.321.0/actions-runner-linux-x64-2.321.0.tar.gz"
        },
        credential: "github#token",
        signing_secret: "runner#signing_key",
        repositories: ["acme/app"]
      }
    }
  ]
})
const target = registry.targets[0]!
const runner = target.precheck_runner!
const layout = runnerLayout(target, runner)

const temp = fs.mkdtempSync(path.join(os.tmpdir(), "keel-runner-render-"))
afterAll(() => fs.rmSync(temp, { recursive: true, force: true }))

describe("the runner's rendered files", () => {
  it("lays the runner out under its root: the account's directories apart, hooks outside the application", () => {
    assert.strictEqual(layout.name, "ci-1")
    assert.strictEqual(layout.account, "keel-runner")
    assert.strictEqual(layout.app, "/opt/keel-runner/app")
    assert.strictEqual(layout.jobStarted, "/opt/keel-runner/hooks/job-started.sh")
    assert.isFalse(layout.jobStarted.startsWith(`${layout.app}/`))
    assert.strictEqual(layout.unit, "/etc/systemd/system/keel-runner-ci-1.service")
    assert.strictEqual(layout.dropIn, "/etc/systemd/system/keel-runner-ci-1.service.d/keel-hooks.conf")
    assert.strictEqual(layout.gatewayUrl, "http://127.0.0.1:8787")
    assert.strictEqual(layout.agentId, "ci-1/ci-1")
  })

  it("sets the hooks in a root-owned drop-in, and the unit carries the drop-in's digest", () => {
    const dropIn = renderHooksDropIn(layout)
    assert.include(dropIn, "Environment=ACTIONS_RUNNER_HOOK_JOB_STARTED=/opt/keel-runner/hooks/job-started.sh")
    assert.include(dropIn, "Environment=ACTIONS_RUNNER_HOOK_JOB_COMPLETED=/opt/keel-runner/hooks/job-completed.sh")
    const unit = renderSystemdUnit(layout)
    assert.include(unit, "User=keel-runner")
    assert.include(unit, "ExecStartPre=+/usr/sbin/nft -f /opt/keel-runner/firewall.nft")
    assert.include(unit, "ExecStart=/opt/keel-runner/app/run.sh")
    const other = renderSystemdUnit(runnerLayout(target, { ...runner, runner_root: "/srv/runner" }))
    assert.notStrictEqual(/drop-in sha256 (\w+)/.exec(unit)?.[1], /drop-in sha256 (\w+)/.exec(other)?.[1])
  })

  it.skipIf(!has("systemd-analyze"))("systemd-analyze verify accepts the unit and its drop-in", () => {
    const here = runnerLayout(target, {
      ...runner,
      runner_root: path.join(temp, "root"),
      unit_dir: path.join(temp, "units")
    })
    fs.mkdirSync(here.app, { recursive: true })
    fs.writeFileSync(`${here.app}/run.sh`, "#!/bin/sh\nexit 0\n", { mode: 0o755 })
    fs.mkdirSync(path.dirname(here.dropIn!), { recursive: true })
    fs.writeFileSync(here.unit, renderSystemdUnit(here, has("nft") ? "/usr/sbin/nft" : "/bin/true"))
    fs.writeFileSync(here.dropIn!, renderHooksDropIn(here))
    const verify = spawnSync("systemd-analyze", ["verify", here.unit], { encoding: "utf8" })
    assert.strictEqual(verify.status, 0, verify.stderr)
    assert.notMatch(verify.stderr, /keel-runner-ci-1\.service:\d+:/, verify.stderr)
  })

  it("renders a LaunchDaemon that runs as the runner account with the hooks in its environment", () => {
    const darwin = { ...target, os: "darwin" as const }
    const plist = renderLaunchDaemon(runnerLayout(darwin, { ...runner, archive: { ...runner.archive, os: "osx" } }))
    assert.include(plist, "<key>UserName</key>\n  <string>keel-runner</string>")
    assert.include(plist, "<key>ACTIONS_RUNNER_HOOK_JOB_COMPLETED</key>")
    assert.strictEqual(runnerLayout(darwin, runner).unit, "/Library/LaunchDaemons/dev.keel.runner.ci-1.plist")
  })

  it("guards admitted public repositories: pull requests from another repository never reach the runner", () => {
    const guard = renderWorkflowGuard(["self-hosted", "Linux", "X64", "precheck"])
    assert.include(
      guard,
      "if: github.event.pull_request == null || github.event.pull_request.head.repo.full_name == github.repository"
    )
    assert.include(guard, "runs-on: [self-hosted, Linux, X64, precheck]")
  })

  it("refuses a sudoers user that is no plain account name (ALL would hand root to everyone) or a --ctl with a line break", () => {
    assert.isUndefined(sudoersProblem("deploy", ["/usr/local/bin/ctl"]))
    assert.isUndefined(sudoersProblem("first.last", ["/usr/local/bin/ctl"]))
    for (const user of [
      "ALL",
      "DEPLOYERS",
      "bad user",
      "keel\nALL ALL=(ALL) NOPASSWD: ALL",
      "%wheel",
      "",
      "a".repeat(33)
    ])
      assert.match(sudoersProblem(user, ["/usr/local/bin/ctl"]) ?? "", /not an account name/, JSON.stringify(user))
    assert.match(sudoersProblem("deploy", ["ctl\nALL ALL=(ALL) ALL"]) ?? "", /one line/)
    assert.match(sudoersProblem("deploy", []) ?? "", /--ctl/)
  })

  it.skipIf(!has("visudo"))("renders a sudoers drop-in visudo accepts", () => {
    const file = path.join(temp, "keel-runner.sudoers")
    fs.writeFileSync(file, renderSudoers("deploy", BOOTSTRAP, ["/usr/local/bin/ctl"]), { mode: 0o440 })
    const checked = spawnSync("visudo", ["-c", "-f", file], { encoding: "utf8" })
    assert.strictEqual(checked.status, 0, `${checked.stdout}${checked.stderr}`)
  })

  it.skipIf(!has("visudo") || !has("sudo") || !isRoot || !has("useradd"))(
    "the drop-in lets the channel user run the bootstrap as root, and nothing else (needs root, sudo)",
    () => {
      const user = `keel-su${process.pid % 100_000}`
      const dropIn = `/etc/sudoers.d/keel-test-${process.pid}`
      execFileSync("useradd", ["--system", "--no-create-home", "--shell", "/bin/sh", user])
      try {
        fs.writeFileSync(dropIn, renderSudoers(user, BOOTSTRAP, ["/usr/local/bin/ctl"]), { mode: 0o440 })
        const asUser = (argv: ReadonlyArray<string>, input: Uint8Array) =>
          spawnSync("setpriv", [`--reuid=${user}`, `--regid=${user}`, "--init-groups", "sudo", "-n", ...argv], {
            input,
            encoding: "utf8"
          })
        const bootstrap = asUser(
          BOOTSTRAP,
          bootstrapInput('printf "%s %s" "$(id -u)" "$KEEL_RUNNER_TOKEN"', { token: "t0ken" })
        )
        assert.strictEqual(bootstrap.stdout, "0 t0ken", bootstrap.stderr)
        const other = asUser(["/bin/sh", "-c", "id -u"], new Uint8Array())
        assert.notStrictEqual(other.status, 0)
        assert.match(other.stderr, /password is required/)
      } finally {
        fs.rmSync(dropIn, { force: true })
        spawnSync("userdel", [user])
      }
    }
  )
})

describe("the lifecycle scripts", () => {
  const scripts = {
    prepare: prepareScript(layout, runner),
    install: installScript(
      layout,
      runner,
      { uid: 1234, gid: 1234, archiveFile: "/var/tmp/x/runner.tar.gz" },
      renderNftTable({ uid: 1234, gatewayPort: 8787 })
    ),
    status: statusScript(layout),
    remove: removeScript(layout, { keepAccount: false }),
    rollback: removeScript(layout, { keepAccount: true }),
    started: renderJobHook(layout, "started"),
    completed: renderJobHook(layout, "completed")
  }

  it("are shell the host's sh parses", () => {
    for (const [name, script] of Object.entries(scripts)) {
      const file = path.join(temp, `${name}.sh`)
      fs.writeFileSync(file, script)
      const parsed = spawnSync("sh", ["-n", file], { encoding: "utf8" })
      assert.strictEqual(parsed.status, 0, `${name}: ${parsed.stderr}`)
    }
  })

  it("never carry a secret themselves: the secrets arrive on stdin, read into unexported variables", () => {
    for (const script of Object.values(scripts)) assert.notInclude(script, "s3cr3t")
    assert.include(
      scripts.install,
      "printf '%s' \"$KEEL_SIGNING_SECRET\" | put /opt/keel-runner/request-signing.key 0600 1234:1234"
    )
    assert.include(scripts.install, "ACTIONS_RUNNER_INPUT_TOKEN=$KEEL_RUNNER_TOKEN; export ACTIONS_RUNNER_INPUT_TOKEN")
    assert.include(scripts.install, "--disableupdate")
  })

  it("the bootstrap keeps stdin's secrets out of every argv and environment but the one they are given to", async () => {
    const seen = path.join(temp, "seen")
    const script = [
      // A child that lives long enough to be seen: its argv and environment must not hold either secret.
      `sleep 0.5 & child=$!`,
      `tr '\\0' ' ' < /proc/$child/cmdline > ${seen}.cmdline; tr '\\0' '\\n' < /proc/$child/environ > ${seen}.environ`,
      `tr '\\0' ' ' < /proc/$$/cmdline > ${seen}.self`,
      "wait",
      `printf '%s|%s' "$KEEL_RUNNER_TOKEN" "$KEEL_SIGNING_SECRET"`
    ].join("\n")
    const child = spawn(BOOTSTRAP[0], BOOTSTRAP.slice(1), {
      stdio: ["pipe", "pipe", "inherit"],
      env: { PATH: process.env.PATH ?? "" }
    })
    child.stdin.end(bootstrapInput(script, { token: "tok-s3cr3t", signingSecret: "sig-s3cr3t" }))
    let out = ""
    child.stdout.on("data", (chunk) => {
      out += chunk
    })
    await new Promise((resolve) => child.on("exit", resolve))
    assert.strictEqual(out, "tok-s3cr3t|sig-s3cr3t")
    for (const file of [".cmdline", ".environ", ".self"])
      assert.notInclude(fs.readFileSync(`${seen}${file}`, "utf8"), "s3cr3t")
  })

  it("report steps and values the control plane parses", () => {
    const parsed = parseScriptOutput(
      "noise\nKEEL-STEP\tarchive\tverified\t2.321.0 sha256 abc\nKEEL-VALUE\tuid\t1001\nKEEL-VALUE\tstat\ta|b\nKEEL-VALUE\tstat\tc|d\n"
    )
    assert.deepStrictEqual(parsed.steps, [{ step: "archive", result: "verified", detail: "2.321.0 sha256 abc" }])
    assert.deepStrictEqual(parsed.values.get("stat"), ["a|b", "c|d"])
  })
})

describe("the job hooks, run for real as an account of their own", () => {
  const account = `keel-hook-${process.pid % 100_000}`
  const ready = isRoot && has("useradd") && has("setpriv")
  afterAll(() => {
    if (ready) spawnSync("userdel", [account])
  })

  it.skipIf(!ready)(
    "clean workspaces, home, temporary files and stray processes (needs root: useradd, setpriv)",
    async () => {
      execFileSync("useradd", ["--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", account])
      const uid = Number(execFileSync("id", ["-u", account], { encoding: "utf8" }).trim())
      const gid = Number(execFileSync("id", ["-g", account], { encoding: "utf8" }).trim())
      const root = path.join(temp, "hooks-root")
      fs.mkdirSync(root, { mode: 0o755 })
      fs.chmodSync(temp, 0o755)
      const here = runnerLayout(target, { ...runner, runner_root: root, account })
      for (const dir of [here.work, here.home, here.hooks]) fs.mkdirSync(dir, { recursive: true })
      for (const dir of [here.work, here.home]) fs.chownSync(dir, uid, gid)
      for (const phase of ["started", "completed"] as const)
        fs.writeFileSync(phase === "started" ? here.jobStarted : here.jobCompleted, renderJobHook(here, phase), {
          mode: 0o755
        })
      const asAccount = (command: ReadonlyArray<string>) =>
        spawnSync("setpriv", [`--reuid=${uid}`, `--regid=${gid}`, "--clear-groups", ...command], { encoding: "utf8" })
      const leave = () => {
        for (const entry of ["repo/src/main.c", "_actions/actions/checkout/index.js", "_temp/step.sh"]) {
          const file = path.join(here.work, entry)
          asAccount(["mkdir", "-p", path.dirname(file)])
          asAccount(["sh", "-c", `echo x > ${file}`])
        }
        asAccount(["sh", "-c", `echo token > ${here.home}/.netrc`])
        asAccount(["sh", "-c", `echo x > /tmp/${account}-left`])
      }
      const rootsFile = path.join(os.tmpdir(), `${account}-root-owned`)
      fs.writeFileSync(rootsFile, "root's")

      leave()
      const stray = spawn("setpriv", [`--reuid=${uid}`, `--regid=${gid}`, "--clear-groups", "sleep", "300"], {
        stdio: "ignore"
      })
      await new Promise((resolve) => setTimeout(resolve, 300))
      const started = asAccount([here.jobStarted])
      assert.strictEqual(started.status, 0, started.stderr)
      assert.sameMembers(
        fs.readdirSync(here.work),
        ["_actions", "_temp"],
        "before a job: what the runner prepared for it stays"
      )
      assert.deepStrictEqual(fs.readdirSync(here.home), [])
      assert.isFalse(fs.existsSync(`/tmp/${account}-left`))
      assert.isTrue(fs.existsSync(rootsFile), "other accounts' files are not touched")
      await new Promise((resolve) => setTimeout(resolve, 200))
      assert.isNotNull(stray.exitCode ?? stray.signalCode, "the stray process of the account was killed")

      leave()
      const completed = asAccount([here.jobCompleted])
      assert.strictEqual(completed.status, 0, completed.stderr)
      assert.deepStrictEqual(fs.readdirSync(here.work), [], "after a job: the whole work directory goes")
      fs.rmSync(rootsFile)
    }
  )
})

describe("the status rules", () => {
  const account = { uid: 1234, gid: 1234 }
  const good = new Map<string, { uid: number; gid: number; mode: number; type: string } | null>([
    [layout.root, { uid: 0, gid: 0, mode: 0o755, type: "directory" }],
    [layout.app, { uid: 0, gid: 0, mode: 0o755, type: "directory" }],
    [layout.work, { uid: 1234, gid: 1234, mode: 0o750, type: "directory" }],
    [layout.jobStarted, { uid: 0, gid: 0, mode: 0o755, type: "regular file" }],
    [layout.signingSecretFile, { uid: 1234, gid: 1234, mode: 0o600, type: "regular file" }],
    [layout.gatewayUrlFile, { uid: 0, gid: 0, mode: 0o644, type: "regular file" }]
  ])

  it("accept the documented layout and name every deviation", () => {
    assert.deepStrictEqual(layoutDeviations(layout, account, good, []), [])
    const bad = new Map(good)
    bad.set(layout.jobStarted, { uid: 1234, gid: 1234, mode: 0o775, type: "regular file" })
    bad.set(layout.signingSecretFile, { uid: 1234, gid: 1234, mode: 0o644, type: "regular file" })
    bad.set(layout.app, { uid: 0, gid: 1234, mode: 0o775, type: "directory" })
    bad.set(layout.gatewayUrlFile, null)
    const problems = layoutDeviations(layout, account, bad, ["1234 1234 644 /opt/keel-runner/app/bin/Runner.Listener"])
    assert.deepStrictEqual(problems, [
      "/opt/keel-runner/app is writable by the runner account (mode 0775)",
      "/opt/keel-runner/hooks/job-started.sh is owned by uid 1234, not root (0)",
      "/opt/keel-runner/hooks/job-started.sh has mode 0775, not 0755",
      "/opt/keel-runner/hooks/job-started.sh is writable by the runner account (mode 0775)",
      "/opt/keel-runner/request-signing.key has mode 0644, not 0600",
      "/opt/keel-runner/gateway.url is missing",
      "/opt/keel-runner/app/bin/Runner.Listener is writable by the runner account (uid 1234, gid 1234, mode 644)"
    ])
    assert.deepStrictEqual(layoutDeviations(layout, null, good, []), ["the account keel-runner does not exist"])
  })

  it("parse stat lines as the status script prints them", () => {
    const stats = parseStats(["0 0 755 directory|/opt/keel-runner", "missing|/opt/keel-runner/agent.id"])
    assert.deepStrictEqual(stats.get("/opt/keel-runner"), { uid: 0, gid: 0, mode: 0o755, type: "directory" })
    assert.isNull(stats.get("/opt/keel-runner/agent.id"))
  })

  it.skipIf(!has("nft") || !has("unshare"))("check the table nft reads back against the rendering", () => {
    const file = path.join(temp, "readback.nft")
    fs.writeFileSync(file, renderNftTable({ uid: 1234, gatewayPort: 8787 }))
    const readback = execFileSync(
      "unshare",
      ["-rn", "sh", "-c", `nft -f ${file} && nft -j list table inet keel_runner_1234`],
      {
        encoding: "utf8"
      }
    )
    assert.deepStrictEqual(firewallProblems(readback, 1234, 8787), [])
    assert.include(firewallProblems(readback, 1234, 9999).join(), "gateway port 9999")
    assert.include(firewallProblems(readback, 4321, 8787).join(), "not keyed to uid 4321")
    assert.deepStrictEqual(firewallProblems("", 1234, 8787), ["the firewall table is not loaded"])
  })
})
