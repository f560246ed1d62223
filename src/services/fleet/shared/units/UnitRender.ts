import * as path from "node:path"
import type { ServiceDeclaration } from "../registry/Schema.js"

/**
 * A unit as a repair installs it: the file's path and text, rendered from a complete declaration (program
 * and args). Rule 1 of seed 002 orders the sources — the host's declaration, the shipped catalog, the
 * declaration bundled with the build; Keel's shipped catalog is the per-kind templates below, so what varies
 * per service is what its declaration says.
 */
export interface UnitDefinition {
  readonly name: string
  /** The unit file (systemd unit or launchd plist) the definition is written to. */
  readonly unit: string
  readonly program: string
  readonly args: ReadonlyArray<string>
  readonly kind: "service" | "oneshot-timer"
  /** The unit file's text. */
  readonly text: string
  /** A oneshot's timer, written beside its service (systemd, the supervisor); absent for a plain service. */
  readonly timer?: { readonly unit: string; readonly text: string } | undefined
}

/** How often a rendered oneshot runs (its timer), when the declaration says nothing: hourly. */
export const DEFAULT_ONESHOT_INTERVAL_SECONDS = 3600

/** One ExecStart argument, quoted as systemd splits them (and as the supervisor parses them back). */
export const quoteArg = (arg: string) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `"${arg.replace(/(["\\$`])/g, "\\$1")}"`)
export const commandLine = (parts: ReadonlyArray<string>) => parts.map(quoteArg).join(" ")

/** ExecStart's words back from a line written by `commandLine` (double quotes, backslash escapes). */
export const parseCommandLine = (line: string): ReadonlyArray<string> => {
  const words: Array<string> = []
  let current = ""
  let quoted = false
  let inWord = false
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!
    if (c === "\\" && quoted && i + 1 < line.length) {
      current += line[++i]
    } else if (c === '"') {
      quoted = !quoted
      inWord = true
    } else if (/\s/.test(c) && !quoted) {
      if (inWord) words.push(current)
      current = ""
      inWord = false
    } else {
      current += c
      inWord = true
    }
  }
  if (inWord) words.push(current)
  return words
}

/** Text for a plist (XML) element or attribute: `&`, `<`, `>` and `"` escaped. */
export const xml = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

/**
 * Why a declaration cannot be rendered into a unit at all (rule 2: it names only a unit path), or undefined: what the
 * host's `ctl service ensure|kick --here` checks before it renders (host recovery ensures recovery-managed units there).
 */
export const unrenderable = (declaration: typeof ServiceDeclaration.Type) =>
  declaration.program === undefined
    ? "declaration_incomplete: the registry entry names no program"
    : declaration.args.some((arg) => /[\n\r\0]/.test(arg))
      ? "an argument spans lines"
      : undefined

/** Why an operator's repair cannot render the declaration: unrenderable, or a recovery-managed unit (rule 5). */
export const renderProblem = (declaration: typeof ServiceDeclaration.Type) =>
  declaration.program === undefined
    ? unrenderable(declaration)
    : declaration.kind === "recovery-managed"
      ? "recovery-managed units are kept by the host-recovery program"
      : unrenderable(declaration)

const timerPath = (unit: string) => unit.replace(/\.service$/, ".timer")

const systemdText = (declaration: typeof ServiceDeclaration.Type, program: string) => {
  const oneshot = declaration.kind === "oneshot-timer"
  return [
    `# Rendered by Keel from the registry declaration of ${declaration.name}: change the registry, not this file.`,
    "[Unit]",
    `Description=Keel ${declaration.name}`,
    "After=network-online.target",
    "",
    "[Service]",
    `Type=${oneshot ? "oneshot" : "simple"}`,
    `ExecStart=${commandLine([program, ...declaration.args])}`,
    ...(declaration.umask === undefined ? [] : [`UMask=${declaration.umask.padStart(4, "0")}`]),
    ...(oneshot ? [] : ["Restart=on-failure", "RestartSec=5"]),
    "",
    ...(oneshot ? [] : ["[Install]", "WantedBy=multi-user.target", ""])
  ].join("\n")
}

const systemdTimer = (declaration: typeof ServiceDeclaration.Type, unit: string) =>
  [
    `# Rendered by Keel: runs ${declaration.name} periodically.`,
    "[Unit]",
    `Description=Run Keel ${declaration.name} periodically`,
    "",
    "[Timer]",
    "OnBootSec=60",
    `OnUnitActiveSec=${DEFAULT_ONESHOT_INTERVAL_SECONDS}`,
    `Unit=${path.basename(unit)}`,
    "",
    "[Install]",
    "WantedBy=timers.target",
    ""
  ].join("\n")

const launchdText = (declaration: typeof ServiceDeclaration.Type, program: string) => {
  const label = path.basename(declaration.unit).replace(/\.plist$/, "")
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">',
    '<plist version="1.0">',
    "<dict>",
    "  <key>Label</key>",
    `  <string>${xml(label)}</string>`,
    "  <key>ProgramArguments</key>",
    "  <array>",
    ...[program, ...declaration.args].map((arg) => `    <string>${xml(arg)}</string>`),
    "  </array>",
    "  <key>RunAtLoad</key>",
    "  <true/>",
    // launchd's Umask is an integer: the octal mode's value.
    ...(declaration.umask === undefined
      ? []
      : ["  <key>Umask</key>", `  <integer>${Number.parseInt(declaration.umask, 8)}</integer>`]),
    ...(declaration.kind === "oneshot-timer"
      ? ["  <key>StartInterval</key>", `  <integer>${DEFAULT_ONESHOT_INTERVAL_SECONDS}</integer>`]
      : ["  <key>KeepAlive</key>", "  <true/>"]),
    "</dict>",
    "</plist>",
    ""
  ].join("\n")
}

/** The unit a repair installs for `declaration` (which `renderProblem` accepted), for the host's OS. */
export const renderUnit = (declaration: typeof ServiceDeclaration.Type, os: "linux" | "darwin"): UnitDefinition => {
  const program = declaration.program ?? ""
  const kind = declaration.kind === "oneshot-timer" ? "oneshot-timer" : "service"
  if (os === "darwin")
    return {
      name: declaration.name,
      unit: declaration.unit,
      program,
      args: declaration.args,
      kind,
      text: launchdText(declaration, program)
    }
  return {
    name: declaration.name,
    unit: declaration.unit,
    program,
    args: declaration.args,
    kind,
    text: systemdText(declaration, program),
    timer:
      kind === "oneshot-timer"
        ? { unit: timerPath(declaration.unit), text: systemdTimer(declaration, declaration.unit) }
        : undefined
  }
}
