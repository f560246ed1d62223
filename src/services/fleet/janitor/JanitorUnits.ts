/** The watch writer as an OS timer: `ctl disk-cleanup --once` on an interval (systemd or launchd). */
export interface JanitorUnitOptions {
  readonly ctl: ReadonlyArray<string>
  readonly intervalSeconds: number
  readonly user?: string | undefined
}

const quote = (arg: string) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `"${arg.replace(/(["\\$`])/g, "\\$1")}"`)

export const renderJanitorSystemd = (options: JanitorUnitOptions) => ({
  "keel-disk-cleanup.service": [
    "[Unit]",
    "Description=Keel disk janitor: one pass (the watch writer)",
    "",
    "[Service]",
    "Type=oneshot",
    ...(options.user === undefined ? [] : [`User=${options.user}`]),
    `ExecStart=${[...options.ctl, "disk-cleanup", "--once", "--timer"].map(quote).join(" ")}`,
    "Nice=10",
    "IOSchedulingClass=idle",
    ""
  ].join("\n"),
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
    ...(options.user === undefined ? [] : ["  <key>UserName</key>", `  <string>${xml(options.user)}</string>`]),
    "  <key>StartInterval</key>",
    `  <integer>${options.intervalSeconds}</integer>`,
    "  <key>LowPriorityIO</key>",
    "  <true/>",
    "</dict>",
    "</plist>",
    ""
  ].join("\n")
})
