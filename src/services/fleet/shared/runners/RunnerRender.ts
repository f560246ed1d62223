import { sha256Hex } from "../../../platform/Digest.js"
import { shellQuote } from "../../../platform/hostchannel/HostChannel.js"
import { commandWordProblem, renderUnitEnvironment } from "../UnitSettings.js"
import { commandLine, xml } from "../units/UnitRender.js"
import type { RunnerLayout } from "./RunnerLayout.js"

/**
 * The pre-check runner's files, rendered (pure functions of its layout): the service unit and its hooks drop-in,
 * the LaunchDaemon, the job hooks, the sudoers drop-in for a non-root channel user and the workflow guard for
 * admitted public repositories (docs/runners.md).
 */

/** The hooks and the tool cache, as the runner's environment: in a root-owned place, never its writable `.env`. */
const runnerEnvironment = (layout: RunnerLayout) => ({
  ACTIONS_RUNNER_HOOK_JOB_STARTED: layout.jobStarted,
  ACTIONS_RUNNER_HOOK_JOB_COMPLETED: layout.jobCompleted,
  RUNNER_TOOL_CACHE: layout.cache,
  HOME: layout.home
})

/** The systemd drop-in that sets the job hooks (root-owned, outside the runner's reach). */
export const renderHooksDropIn = (layout: RunnerLayout) =>
  [
    "# Rendered by Keel (docs/runners.md): the job hooks are set here, root-owned, not in the runner's .env.",
    "[Service]",
    ...Object.entries(runnerEnvironment(layout)).map(
      ([name, value]) => `Environment=${commandLine([`${name}=${value}`])}`
    ),
    ""
  ].join("\n")

/**
 * The runner's systemd unit. It carries the drop-in's digest, so a changed drop-in changes the unit and the
 * service manager reloads it. The firewall table is re-applied (as root: `+`) before every start, boot included.
 */
export const renderSystemdUnit = (layout: RunnerLayout, nft = "/usr/sbin/nft") =>
  [
    `# Rendered by Keel for the pre-check runner ${layout.name} (docs/runners.md); change the registry, not this file.`,
    `# drop-in sha256 ${sha256Hex(renderHooksDropIn(layout))}`,
    "[Unit]",
    `Description=Keel pre-check runner ${layout.name}`,
    "After=network-online.target",
    "Wants=network-online.target",
    "",
    "[Service]",
    "Type=simple",
    `User=${layout.account}`,
    `Group=${layout.account}`,
    `WorkingDirectory=${layout.app}`,
    `ExecStartPre=+${commandLine([nft, "-f", layout.firewallFile])}`,
    `ExecStart=${commandLine([`${layout.app}/run.sh`])}`,
    "Restart=always",
    "RestartSec=5",
    "TimeoutStopSec=5min",
    "NoNewPrivileges=yes",
    "PrivateTmp=yes",
    "ProtectSystem=full",
    "",
    "[Install]",
    "WantedBy=multi-user.target",
    ""
  ].join("\n")

/** The runner's LaunchDaemon (macOS): a system daemon run as the runner account, the hooks in its environment. */
export const renderLaunchDaemon = (layout: RunnerLayout) =>
  [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">',
    '<plist version="1.0">',
    "<dict>",
    "  <key>Label</key>",
    `  <string>${xml(`dev.keel.runner.${layout.name}`)}</string>`,
    "  <key>ProgramArguments</key>",
    "  <array>",
    `    <string>${xml(`${layout.app}/run.sh`)}</string>`,
    "  </array>",
    "  <key>UserName</key>",
    `  <string>${xml(layout.account)}</string>`,
    "  <key>GroupName</key>",
    `  <string>${xml(layout.account)}</string>`,
    "  <key>WorkingDirectory</key>",
    `  <string>${xml(layout.app)}</string>`,
    "  <key>EnvironmentVariables</key>",
    "  <dict>",
    ...Object.entries(runnerEnvironment(layout)).flatMap(([name, value]) => [
      `    <key>${xml(name)}</key>`,
      `    <string>${xml(value)}</string>`
    ]),
    "  </dict>",
    "  <key>RunAtLoad</key>",
    "  <true/>",
    "  <key>KeepAlive</key>",
    "  <true/>",
    "</dict>",
    "</plist>",
    ""
  ].join("\n")

/**
 * A job hook (root-owned file, run by the runner as its account before and after each job): removes what a job
 * leaves — workspaces, the account's home, its temporary files, its stray processes. Before a job, the actions
 * and temp directory the runner just prepared for it stay; after it, the whole work directory goes.
 */
export const renderJobHook = (layout: RunnerLayout, phase: "started" | "completed") =>
  [
    "#!/bin/sh",
    `# Keel pre-check runner hook, job ${phase} (docs/runners.md); generated, do not edit.`,
    "# A non-zero exit before a job fails that job: nothing runs on a host that could not be cleaned.",
    "set -eu",
    `work=${shellQuote(layout.work)}`,
    `home=${shellQuote(layout.home)}`,
    `root=${shellQuote(layout.root)}`,
    "uid=$(id -u)",
    phase === "started"
      ? 'find "$work" -mindepth 1 -maxdepth 1 ! -name _actions ! -name _temp -exec rm -rf {} +'
      : 'find "$work" -mindepth 1 -maxdepth 1 -exec rm -rf {} +',
    'find "$home" -mindepth 1 -maxdepth 1 -exec rm -rf {} +',
    "for dir in /tmp /var/tmp /dev/shm; do",
    '  if [ -d "$dir" ]; then find "$dir" -xdev -mindepth 1 -path "$root" -prune -o -user "$uid" -exec rm -rf {} + 2>/dev/null || true; fi',
    "done",
    "# Every process of the account but this hook's own chain (the runner that runs it) is a job's leftover.",
    'keep=" $$ "',
    "pid=$$",
    'while [ "$pid" -gt 1 ]; do',
    '  pid=$(ps -o ppid= -p "$pid" | tr -d " ")',
    '  [ -n "$pid" ] || break',
    '  keep="$keep$pid "',
    "done",
    'for p in $(ps -o pid= -u "$uid"); do',
    '  case "$keep" in *" $p "*) ;; *) kill -KILL "$p" 2>/dev/null || true ;; esac',
    "done",
    ""
  ].join("\n")

/**
 * The gateway's unit (`ctl host gateway`, as root: it reads the account's signing secret), its routing and grant in
 * root-owned files under the runner root.
 */
export const renderGatewayUnit = (layout: RunnerLayout, target: string) => {
  const gateway = layout.gateway
  if (gateway === null) throw new Error(`${layout.name} declares no control_plane_url: no gateway`)
  return [
    `# Rendered by Keel for the pre-check runner ${layout.name}'s gateway (docs/runners.md); change the registry, not this file.`,
    "[Unit]",
    `Description=Keel pre-check gateway ${layout.name}`,
    "After=network-online.target",
    "Wants=network-online.target",
    "",
    "[Service]",
    "Type=simple",
    `EnvironmentFile=${gateway.envFile}`,
    `ExecStart=${commandLine([gateway.ctl, "host", "gateway", "--target", target])}`,
    "Restart=always",
    "RestartSec=5",
    "NoNewPrivileges=yes",
    "",
    "[Install]",
    "WantedBy=multi-user.target",
    ""
  ].join("\n")
}

/**
 * The gateway's routing: where the control plane is and its grant file (the credential stays in its file), with what
 * the host's ctl needs to run on its own (`base`: its registry, data dir).
 */
export const renderGatewayEnv = (layout: RunnerLayout, target: string, base: Readonly<Record<string, string>>) =>
  layout.gateway === null
    ? ""
    : renderUnitEnvironment(
        {
          ...base,
          KEEL_CONTROL_PLANE_URL: layout.gateway.controlPlaneUrl,
          KEEL_GATEWAY_GRANT_FILE: layout.gateway.grantFile,
          KEEL_HOST: target
        },
        "Rendered by Keel for the pre-check gateway (docs/runners.md)."
      )

/** sudoers escapes: a command's arguments may not carry `,` `:` `=` `\` unescaped (sudo matches the rest as typed). */
const sudoersWord = (word: string) => word.replace(/([\\,:=])/g, "\\$1")

/**
 * Why a sudoers drop-in cannot be rendered for this user and command, or undefined. The user is a plain account
 * name in lower case: `ALL` (or any upper-case alias name) would hand the rule to every user, and a space or a
 * line break would write another rule.
 */
export const sudoersProblem = (user: string, ctl: ReadonlyArray<string>): string | undefined => {
  if (!/^[a-z_][a-z0-9_.-]*\$?$/.test(user) || user.length > 32)
    return `--user ${JSON.stringify(user)}: not an account name (lower-case letters, digits, _, . and -)`
  if (ctl.length === 0) return "--ctl must name the ctl command"
  for (const word of ctl) {
    const problem = commandWordProblem(word)
    if (problem !== undefined) return `--ctl: ${problem}`
  }
  return undefined
}

/**
 * The sudoers drop-in that lets a non-root channel user run exactly the installer's bootstrap and ctl's runner
 * unit command as root, without a password (`visudo -c` checks it). The bootstrap evaluates the installer it
 * reads on stdin, so this user is as trusted as root on the host: grant it only to the fleet's channel user.
 */
export const renderSudoers = (user: string, bootstrap: ReadonlyArray<string>, ctl: ReadonlyArray<string>) =>
  [
    "# Keel pre-check runner lifecycle (docs/runners.md): the channel user runs the installer as root.",
    `Defaults:${user} !requiretty`,
    `${user} ALL=(root) NOPASSWD: ${bootstrap.map(sudoersWord).join(" ")}, ${[...ctl, "host", "precheck-runner", "unit"].map(sudoersWord).join(" ")} *`,
    ""
  ].join("\n")

/**
 * The guard an admitted public repository's workflow carries (rule 4): a pull request whose head repository is not
 * the base repository never reaches the self-hosted runner — the job is skipped before it is scheduled. It reads
 * `github.event.pull_request`, so `pull_request_target` (which runs in the base's context) is covered too.
 */
export const renderWorkflowGuard = (labels: ReadonlyArray<string>) =>
  [
    "# Keel pre-check guard (docs/runners.md): pull requests from another repository (forks) never run here.",
    "jobs:",
    "  precheck:",
    "    if: github.event.pull_request == null || github.event.pull_request.head.repo.full_name == github.repository",
    `    runs-on: [${labels.join(", ")}]`,
    "    steps:",
    "      - uses: actions/checkout@v4",
    ""
  ].join("\n")
