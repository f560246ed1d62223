import * as path from "node:path"
import type { PrecheckRunnerDeclaration, Target } from "../registry/Schema.js"

type Declaration = typeof PrecheckRunnerDeclaration.Type

/**
 * Where a pre-check runner's pieces live on its host (docs/runners.md, "Layout"). Everything under `root` is
 * root-owned and not writable by the runner account, except `runnerOwned`; the hooks sit outside the runner's
 * application directory, and the unit (or LaunchDaemon) and its drop-in are root's.
 */
export interface RunnerLayout {
  /** The runner's name at the provider. */
  readonly name: string
  readonly account: string
  readonly root: string
  /** The runner application (the extracted archive). */
  readonly app: string
  readonly work: string
  readonly diagnostics: string
  readonly cache: string
  /** The account's HOME: tools' own state (dotfiles), cleaned by the hooks. */
  readonly home: string
  readonly hooks: string
  readonly jobStarted: string
  readonly jobCompleted: string
  /** The runner's own state files (written by its configuration, read by the runner only). */
  readonly stateFiles: ReadonlyArray<string>
  /** The runner's environment files, root-owned so a job cannot rewrite the next job's environment. */
  readonly envFiles: ReadonlyArray<string>
  readonly gatewayUrlFile: string
  readonly agentIdFile: string
  readonly signingSecretFile: string
  readonly firewallFile: string
  /** The service: a systemd unit (Linux) or a LaunchDaemon plist (macOS). */
  readonly unit: string
  /** The root-owned drop-in that sets the hooks (systemd); none under launchd (the plist carries them). */
  readonly dropIn: string | null
  /** The gateway (`ctl host gateway`), when the runner declares a control plane: its unit, grant and routing. */
  readonly gateway: {
    readonly unit: string
    readonly grantFile: string
    readonly envFile: string
    readonly controlPlaneUrl: string
    readonly consumer: string
    /** The ctl the unit runs: the target's `ctl` binary, or /usr/local/bin/ctl. */
    readonly ctl: string
  } | null
  readonly groupLabel: string
  /** The non-secret agent identifier published beside the gateway URL file. */
  readonly agentId: string
  readonly gatewayUrl: string
}

/** The directories the runner account owns (and may write): everything else under the root is root's. */
export const runnerOwned = (layout: RunnerLayout) => [layout.work, layout.diagnostics, layout.cache, layout.home]

export const runnerLayout = (target: Target, runner: Declaration): RunnerLayout => {
  const name = runner.name ?? target.name
  const root = runner.runner_root
  const app = path.posix.join(root, "app")
  const hooks = path.posix.join(root, "hooks")
  const service = `keel-runner-${name}`
  const unit =
    target.os === "darwin"
      ? `/Library/LaunchDaemons/dev.keel.runner.${name}.plist`
      : path.posix.join(runner.unit_dir, `${service}.service`)
  return {
    name,
    account: runner.account,
    root,
    app,
    work: path.posix.join(root, "work"),
    diagnostics: path.posix.join(app, "_diag"),
    cache: path.posix.join(root, "cache"),
    home: path.posix.join(root, "home"),
    hooks,
    jobStarted: path.posix.join(hooks, "job-started.sh"),
    jobCompleted: path.posix.join(hooks, "job-completed.sh"),
    stateFiles: [".runner", ".credentials", ".credentials_rsaparams"].map((f) => path.posix.join(app, f)),
    envFiles: [".env", ".path"].map((f) => path.posix.join(app, f)),
    gatewayUrlFile: path.posix.join(root, "gateway.url"),
    agentIdFile: path.posix.join(root, "agent.id"),
    signingSecretFile: path.posix.join(root, "request-signing.key"),
    firewallFile: path.posix.join(root, target.os === "darwin" ? "firewall.pf" : "firewall.nft"),
    unit,
    dropIn: target.os === "darwin" ? null : `${unit}.d/keel-hooks.conf`,
    gateway:
      runner.control_plane_url === undefined
        ? null
        : {
            unit:
              target.os === "darwin"
                ? `/Library/LaunchDaemons/dev.keel.gateway.${name}.plist`
                : path.posix.join(runner.unit_dir, `keel-gateway-${name}.service`),
            grantFile: path.posix.join(root, "gateway.grant"),
            envFile: path.posix.join(root, "gateway.env"),
            controlPlaneUrl: runner.control_plane_url,
            consumer: gatewayConsumer(target),
            ctl: target.binaries.find((b) => b.name === "ctl")?.path ?? "/usr/local/bin/ctl"
          },
    groupLabel: runner.runner_group,
    agentId: `${target.name}/${name}`,
    gatewayUrl: `http://127.0.0.1:${runner.gateway_port}`
  }
}

/** The vault consumer of a target's gateway: `actions.job-submit` must list it. */
export const gatewayConsumer = (target: Target) => `gateway-${target.name}`

/** The organization a runner registers with: the last segment of its URL. */
export const organizationOf = (runner: Declaration) => runner.url.replace(/\/+$/, "").split("/").pop() ?? ""

/** The labels the provider must report for the runner (rule 5): self-hosted, OS, architecture, group label. */
export const expectedLabels = (target: Target, runner: Declaration) => [
  "self-hosted",
  target.os === "darwin" ? "macOS" : "Linux",
  runner.archive.arch === "arm64" ? "ARM64" : "X64",
  runner.runner_group
]
