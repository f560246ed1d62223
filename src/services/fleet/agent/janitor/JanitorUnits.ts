import { DEFAULT_UNIT_USER, renderUnitEnvironment } from "../../shared/UnitSettings.js"

/** The watch writer as an OS timer: `ctl disk-cleanup --once --timer` on an interval (systemd or launchd). */
export interface JanitorUnitOptions {
  readonly ctl: ReadonlyArray<string>
  readonly intervalSeconds: number
  /** The account the pass runs as (default `keel`): it deletes only caches whose tag this user owns. */
  readonly user?: string | undefined
  readonly group?: string | undefined
  /** Where the systemd unit reads its settings (default /etc/keel/disk-cleanup.env). */
  readonly environmentFile?: string | undefined
  /** The settings the pass needs on its own (KEEL_REGISTRY, KEEL_DATA_DIR, KEEL_HOST, …). */
  readonly environment?: Readonly<Record<string, string>> | undefined
}

export const DEFAULT_ENVIRONMENT_FILE = "/etc/keel/disk-cleanup.env"

const quote = (arg: string) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `"${arg.replace(/(["\\$`])/g, "\\$1")}"`)

export const renderJanitorSystemd = (options: JanitorUnitOptions) => ({
  "keel-disk-cleanup.service": [
    "[Unit]",
    "Description=Keel disk janitor: one pass (the watch writer)",
    "",
    "[Service]",
    "Type=oneshot",
    `User=${options.user ?? DEFAULT_UNIT_USER}`,
    `Group=${options.group ?? options.user ?? DEFAULT_UNIT_USER}`,
    // Settings (registry, data dir, host) come from this file; without them the pass has no policy.
    `EnvironmentFile=${options.environmentFile ?? DEFAULT_ENVIRONMENT_FILE}`,
    `ExecStart=${[...options.ctl, "disk-cleanup", "--once", "--timer"].map(quote).join(" ")}`,
    "Nice=10",
    "IOSchedulingClass=idle",
    "NoNewPrivileges=yes",
    "PrivateTmp=yes",
    ""
  ].join("\n"),
  "disk-cleanup.env": renderUnitEnvironment(options.environment ?? {}),
  "keel-disk-cleanup.timer": [
    "[Unit]",
    "Description=Run the Keel disk janitor periodically",
    "",
    "[Timer]",
    "OnBootSec=300",
    `OnUnitActiveSec=${options.intervalSeconds}`,
    "Unit=keel-disk-cleanup.service",
    "",
    "[Install]",
    "WantedBy=timers.target",
    ""
  ].join("\n")
})

const xml = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

export const renderJanitorLaunchd = (options: JanitorUnitOptions) => ({
  "dev.keel.disk-cleanup.plist": [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">',
    '<plist version="1.0">',
    "<dict>",
    "  <key>Label</key>",
    "  <string>dev.keel.disk-cleanup</string>",
    "  <key>ProgramArguments</key>",
    "  <array>",
    ...[...options.ctl, "disk-cleanup", "--once", "--timer"].map((arg) => `    <string>${xml(arg)}</string>`),
    "  </array>",
    "  <key>UserName</key>",
    `  <string>${xml(options.user ?? DEFAULT_UNIT_USER)}</string>`,
    ...(Object.keys(options.environment ?? {}).length === 0
      ? []
      : [
          "  <key>EnvironmentVariables</key>",
          "  <dict>",
          ...Object.entries(options.environment ?? {}).flatMap(([key, value]) => [
            `    <key>${xml(key)}</key>`,
            `    <string>${xml(value)}</string>`
          ]),
          "  </dict>"
        ]),
    "  <key>StartInterval</key>",
    `  <integer>${options.intervalSeconds}</integer>`,
    "  <key>LowPriorityIO</key>",
    "  <true/>",
    "</dict>",
    "</plist>",
    ""
  ].join("\n")
})
