import * as path from "node:path"
import {
  DEFAULT_UNIT_USER,
  renderUnitEnvironment,
  type UnitSettings,
  unitSettingsProblem
} from "../../shared/UnitSettings.js"
import { commandLine as command, xml } from "../../shared/units/UnitRender.js"

/** What the rendered units need: the `ctl` to run, where the beacon goes, the non-secret routing. */
export interface BeaconUnitOptions {
  /** Absolute command that runs ctl (e.g. `/usr/local/bin/ctl`, or `/usr/bin/node /opt/keel/bin/ctl.js`). */
  readonly ctl: ReadonlyArray<string>
  readonly beaconFile: string
  readonly envFile: string
  readonly intervalSeconds: number
  /** The account the units run as (default `keel`). */
  readonly user?: string | undefined
  readonly group?: string | undefined
  /** The settings `ctl` needs on its own (KEEL_REGISTRY, KEEL_DATA_DIR, KEEL_HOST: see UnitSettings). */
  readonly environment?: Readonly<Record<string, string>> | undefined
  readonly routing: {
    readonly controlPlaneUrl: string
    readonly vaultUrl: string
    readonly consumer: string
    readonly grantFile: string
    /** The grant for `ctl host publish-state` (host-state-write); without one the units publish the beacon only. */
    readonly stateGrantFile?: string | undefined
  }
}

/** Every variable the units set: ctl's own settings (a registry URL may carry a token), then the routing. */
export const beaconEnvironment = (options: BeaconUnitOptions): Record<string, string> => ({
  ...options.environment,
  KEEL_CONTROL_PLANE_URL: options.routing.controlPlaneUrl,
  KEEL_VAULT_URL: options.routing.vaultUrl,
  KEEL_BEACON_CONSUMER: options.routing.consumer,
  KEEL_BEACON_GRANT_FILE: options.routing.grantFile,
  ...(options.routing.stateGrantFile === undefined ? {} : { KEEL_STATE_GRANT_FILE: options.routing.stateGrantFile })
})

/** What each run does, in order: write the beacon, publish it, and (with a state grant) publish the host's state. */
const steps = (options: BeaconUnitOptions): ReadonlyArray<ReadonlyArray<string>> => [
  [...options.ctl, "host", "beacon", "write", "--out", options.beaconFile],
  [...options.ctl, "host", "publish-beacon", options.beaconFile],
  ...(options.routing.stateGrantFile === undefined ? [] : [[...options.ctl, "host", "publish-state"]])
]

/** Why these options cannot be rendered (a value with a newline, a bad account name, a relative path). */
export const beaconUnitProblem = (options: BeaconUnitOptions): string | undefined =>
  unitSettingsProblem({
    user: options.user,
    group: options.group,
    environmentFile: options.envFile,
    environment: beaconEnvironment(options),
    command: options.ctl
  } satisfies UnitSettings) ??
  (path.isAbsolute(options.beaconFile) ? undefined : "the beacon file must be an absolute path")

/** The EnvironmentFile both units read: ctl's settings (KEEL_REGISTRY may carry a credential), origins, grant paths. */
export const renderEnvFile = (options: BeaconUnitOptions) =>
  renderUnitEnvironment(
    beaconEnvironment(options),
    "Keel beacon settings and routing; owner-only, as KEEL_REGISTRY may carry a credential. The grant credential itself stays in its own owner-only file."
  )

/** A oneshot service that writes then publishes the beacon, and the timer that runs it. */
export const renderSystemd = (options: BeaconUnitOptions) => ({
  "keel-beacon.service": [
    "[Unit]",
    "Description=Keel host-health beacon (write and publish)",
    "Wants=network-online.target",
    "After=network-online.target",
    "",
    "[Service]",
    "Type=oneshot",
    `EnvironmentFile=${options.envFile}`,
    `User=${options.user ?? DEFAULT_UNIT_USER}`,
    `Group=${options.group ?? options.user ?? DEFAULT_UNIT_USER}`,
    ...steps(options).map((step) => `ExecStart=${command(step)}`),
    // It reads the host and writes two places: its beacon and ctl's data dir.
    "NoNewPrivileges=yes",
    "PrivateTmp=yes",
    "ProtectSystem=strict",
    `ReadWritePaths=${[...new Set([path.dirname(options.beaconFile), ...(options.environment?.KEEL_DATA_DIR === undefined ? [] : [options.environment.KEEL_DATA_DIR])])].join(" ")}`,
    ""
  ].join("\n"),
  "keel-beacon.timer": [
    "[Unit]",
    "Description=Publish the Keel host-health beacon periodically",
    "",
    "[Timer]",
    "OnBootSec=60",
    `OnUnitActiveSec=${options.intervalSeconds}`,
    "Unit=keel-beacon.service",
    "",
    "[Install]",
    "WantedBy=timers.target",
    ""
  ].join("\n")
})

/** A launchd daemon with the same routing metadata, run every interval. */
export const renderLaunchd = (options: BeaconUnitOptions) => {
  const script = steps(options).map(command).join(" && ")
  const env = beaconEnvironment(options)
  return {
    "dev.keel.beacon.plist": [
      '<?xml version="1.0" encoding="UTF-8"?>',
      '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">',
      '<plist version="1.0">',
      "<dict>",
      "  <key>Label</key>",
      "  <string>dev.keel.beacon</string>",
      "  <key>ProgramArguments</key>",
      "  <array>",
      "    <string>/bin/sh</string>",
      "    <string>-c</string>",
      `    <string>${xml(script)}</string>`,
      "  </array>",
      "  <key>EnvironmentVariables</key>",
      "  <dict>",
      ...Object.entries(env).flatMap(([k, v]) => [`    <key>${k}</key>`, `    <string>${xml(v)}</string>`]),
      "  </dict>",
      "  <key>UserName</key>",
      `  <string>${xml(options.user ?? DEFAULT_UNIT_USER)}</string>`,
      "  <key>StartInterval</key>",
      `  <integer>${options.intervalSeconds}</integer>`,
      "  <key>RunAtLoad</key>",
      "  <true/>",
      "</dict>",
      "</plist>",
      ""
    ].join("\n")
  }
}

export type PlistValue = string | number | boolean | ReadonlyArray<PlistValue> | { readonly [key: string]: PlistValue }

/**
 * A strict parser for the XML property-list subset launchd reads (dict, key, string, integer, array,
 * true, false), as `plutil -lint` would check it: anything else, unbalanced or misplaced, throws.
 */
export const parsePlist = (text: string): PlistValue => {
  const body = text
    .replace(/^<\?xml[^>]*\?>\s*/, "")
    .replace(/^<!DOCTYPE plist[^>]*>\s*/, "")
    .trim()
  const tokens = body.match(/<[^>]+>|[^<]+/g) ?? []
  let i = 0
  const next = () => {
    while (i < tokens.length && tokens[i]!.trim() === "") i++
    return tokens[i++]
  }
  const unescapeXml = (s: string) =>
    s
      .replace(/&lt;/g, "<")
      .replace(/&gt;/g, ">")
      .replace(/&quot;/g, '"')
      .replace(/&amp;/g, "&")
  const textUntil = (close: string) => {
    let value = ""
    while (i < tokens.length && tokens[i] !== close) {
      if (tokens[i]!.startsWith("<")) throw new Error(`unexpected ${tokens[i]} before ${close}`)
      value += tokens[i++]
    }
    if (tokens[i++] !== close) throw new Error(`missing ${close}`)
    return unescapeXml(value)
  }
  const value = (open: string | undefined): PlistValue => {
    switch (open) {
      case "<string>":
        return textUntil("</string>")
      case "<integer>": {
        const n = textUntil("</integer>")
        if (!/^-?\d+$/.test(n)) throw new Error(`not an integer: ${n}`)
        return Number(n)
      }
      case "<true/>":
        return true
      case "<false/>":
        return false
      case "<array>": {
        const items: Array<PlistValue> = []
        for (let t = next(); t !== "</array>"; t = next()) items.push(value(t))
        return items
      }
      case "<dict>": {
        const dict: Record<string, PlistValue> = {}
        for (let t = next(); t !== "</dict>"; t = next()) {
          if (t !== "<key>") throw new Error(`expected <key>, got ${t}`)
          const key = textUntil("</key>")
          dict[key] = value(next())
        }
        return dict
      }
      default:
        throw new Error(`unexpected ${open ?? "end of document"}`)
    }
  }
  if (next() !== '<plist version="1.0">') throw new Error('the document must be <plist version="1.0">')
  const root = value(next())
  if (next() !== "</plist>") throw new Error("missing </plist>")
  if (next() !== undefined) throw new Error("content after </plist>")
  return root
}
