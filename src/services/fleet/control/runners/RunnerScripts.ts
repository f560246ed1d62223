import { sha256Hex } from "../../../platform/Digest.js"
import { shellQuote } from "../../../platform/hostchannel/HostChannel.js"
import type { PrecheckRunnerDeclaration } from "../../shared/registry/Schema.js"
import { type RunnerLayout, runnerOwned } from "../../shared/runners/RunnerLayout.js"
import { renderHooksDropIn, renderJobHook } from "../../shared/runners/RunnerRender.js"
import { nftTableName } from "./RunnerFirewall.js"

type Declaration = typeof PrecheckRunnerDeclaration.Type

/**
 * The root scripts of a pre-check runner's lifecycle on its host (Linux), rendered on the control plane and sent
 * with their secrets on the host channel's stdin: the first line is the registration (or removal) token, the
 * second the request-signing secret, the rest the script. `BOOTSTRAP` is the whole command line: it reads the two
 * lines into shell variables (never exported, never in argv) and evaluates the rest — so no secret is ever in a
 * process's argv or in the environment of the calling process, and only `config.sh` gets the token, in the
 * variable the runner reads and removes (`ACTIONS_RUNNER_INPUT_TOKEN`).
 *
 * Each step prints `KEEL-STEP<TAB>step<TAB>result<TAB>detail`; facts for the control plane are `KEEL-VALUE` lines.
 * A failed step ends the script (exit 1) after saying so.
 */
export const BOOTSTRAP = [
  "/bin/sh",
  "-c",
  'IFS= read -r KEEL_RUNNER_TOKEN; IFS= read -r KEEL_SIGNING_SECRET; eval "$(cat)"'
] as const

/** stdin for `BOOTSTRAP`: the secrets, one per line, then the script. */
export const bootstrapInput = (script: string, secrets: { token?: string; signingSecret?: string } = {}) =>
  new TextEncoder().encode(`${secrets.token ?? ""}\n${secrets.signingSecret ?? ""}\n${script}`)

const q = shellQuote

const prelude = [
  "set -u",
  "umask 022",
  "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
  "step() { printf 'KEEL-STEP\\t%s\\t%s\\t%s\\n' \"$1\" \"$2\" \"$(printf '%s' \"$3\" | tr '\\t\\n' '  ')\"; }",
  "value() { printf 'KEEL-VALUE\\t%s\\t%s\\n' \"$1\" \"$(printf '%s' \"$2\" | tr '\\t\\n' '  ')\"; }",
  'fail() { step "$1" failed "$2"; exit 1; }',
  '[ "$(id -u)" = 0 ] || fail preflight "the runner lifecycle needs root; the channel user is $(id -un) (docs/runners.md: sudo)"',
  "if command -v sha256sum >/dev/null 2>&1; then digest() { sha256sum \"$1\" | cut -d ' ' -f 1; }",
  "elif command -v shasum >/dev/null 2>&1; then digest() { shasum -a 256 \"$1\" | cut -d ' ' -f 1; }",
  'else fail preflight "neither sha256sum nor shasum is installed"; fi'
]

/** A here-document writer: the file is staged beside its place, owned and moded, then renamed over it. */
const putFunction =
  'put() { tmp="$1.keel-tmp"; cat > "$tmp" && chown "$3" "$tmp" && chmod "$2" "$tmp" && mv -f "$tmp" "$1"; }'

const heredoc = (file: string, mode: string, owner: string, text: string) => {
  const marker = `KEEL_EOF_${sha256Hex(text).slice(0, 16)}`
  if (text.split("\n").includes(marker)) throw new Error(`${file}: the text contains its own end marker`)
  return [
    `put ${q(file)} ${mode} ${owner} <<'${marker}' || fail files "cannot write ${file}"`,
    text.replace(/\n$/, ""),
    marker
  ]
}

/**
 * Phase one, before anything is created: root, the tools, the archive downloaded and checked against its pin
 * (a mismatch refuses with nothing installed), then the account (created, or found).
 */
export const prepareScript = (layout: RunnerLayout, runner: Declaration) =>
  [
    ...prelude,
    "for tool in tar useradd userdel setpriv nft install find; do",
    '  command -v "$tool" >/dev/null 2>&1 || fail preflight "$tool is not installed"',
    "done",
    'if command -v curl >/dev/null 2>&1; then fetch() { curl -fsSL --max-time 600 -o "$2" "$1"; }',
    'elif command -v wget >/dev/null 2>&1; then fetch() { wget -q -T 600 -O "$2" "$1"; }',
    'else fail preflight "neither curl nor wget is installed"; fi',
    'step preflight ok "root on $(uname -sm)"',
    `url=${q(runner.archive.url)}`,
    `sha=${q(runner.archive.sha256)}`,
    'dir=$(mktemp -d /var/tmp/keel-runner-archive.XXXXXX) || fail archive "no temporary directory"',
    'file="$dir/runner.tar.gz"',
    'fetch "$url" "$file" || { rm -rf "$dir"; fail archive "the download of $url failed"; }',
    'got=$(digest "$file")',
    'if [ "$got" != "$sha" ]; then rm -rf "$dir"; fail archive "sha256 $got of $url is not the pinned $sha: refused, nothing was installed"; fi',
    `step archive verified ${q(`${runner.archive.version} ${runner.archive.os}-${runner.archive.arch}`)}" sha256 $sha"`,
    `account=${q(layout.account)}`,
    'if uid=$(id -u "$account" 2>/dev/null); then',
    '  if [ "$uid" = 0 ]; then rm -rf "$dir"; fail account "$account is root"; fi',
    '  step account present "uid $uid"',
    "else",
    `  useradd --system --user-group --home-dir ${q(layout.home)} --no-create-home --shell /usr/sbin/nologin "$account" || { rm -rf "$dir"; fail account "useradd $account failed"; }`,
    '  uid=$(id -u "$account")',
    '  step account created "uid $uid"',
    "fi",
    `if [ -f ${q(`${layout.app}/.runner`)} ]; then value installed yes; fi`,
    'value archive_file "$file"',
    'value uid "$uid"',
    'value gid "$(id -g "$account")"',
    ""
  ].join("\n")

/**
 * Phase two, with the account's ids known: the layout, the verified archive extracted, the runner configured with
 * the registration token (as the account, `--disableupdate`), the hooks and their drop-in, the signing secret
 * (0600, the account's), the gateway URL and agent id files, and the firewall table applied and read back.
 */
export const installScript = (
  layout: RunnerLayout,
  runner: Declaration,
  ids: { readonly uid: number; readonly gid: number; readonly archiveFile: string },
  firewall: string
) => {
  const owner = `${ids.uid}:${ids.gid}`
  const table = nftTableName(ids.uid)
  return [
    ...prelude,
    putFunction,
    `uid=${ids.uid}`,
    `gid=${ids.gid}`,
    `app=${q(layout.app)}`,
    `file=${q(ids.archiveFile)}`,
    `install -d -m 0755 -o 0 -g 0 ${[layout.root, layout.app, layout.hooks].map(q).join(" ")} || fail layout "cannot create ${layout.root}"`,
    `install -d -m 0750 -o ${ids.uid} -g ${ids.gid} ${[layout.work, layout.cache].map(q).join(" ")} || fail layout "cannot create the work and cache directories"`,
    `install -d -m 0700 -o ${ids.uid} -g ${ids.gid} ${q(layout.home)} || fail layout "cannot create ${layout.home}"`,
    `step layout ok ${q(layout.root)}`,
    `[ "$(digest "$file")" = ${q(runner.archive.sha256)} ] || fail extract "$file changed since it was verified"`,
    // The same pinned archive installed already: its files stay (a running runner keeps running on them).
    `if [ "$(cat "$app/.keel-archive" 2>/dev/null)" = ${q(runner.archive.sha256)} ]; then`,
    '  rm -rf "$(dirname "$file")"',
    `  step extract present ${q(runner.archive.version)}`,
    "else",
    '  find "$app" -mindepth 1 -maxdepth 1 -exec rm -rf {} +',
    '  tar -xzf "$file" -C "$app" --no-same-owner || fail extract "tar could not extract $file"',
    '  rm -rf "$(dirname "$file")"',
    '  [ -x "$app/config.sh" ] && [ -x "$app/run.sh" ] || fail extract "the archive holds no config.sh and run.sh"',
    '  chown -R 0:0 "$app" && chmod -R go-w "$app" || fail extract "cannot own $app"',
    `  printf '%s\\n' ${q(runner.archive.sha256)} > "$app/.keel-archive"`,
    `  step extract ok ${q(runner.archive.version)}`,
    "fi",
    `install -d -m 0750 -o ${ids.uid} -g ${ids.gid} ${q(layout.diagnostics)} || fail extract "cannot create _diag"`,
    "# The runner writes its state into its application directory: for configuring only, that directory is its.",
    "# Its environment files are root's once written: configuring writes them anew.",
    `rm -f ${layout.envFiles.map(q).join(" ")}`,
    'chown "$uid:$gid" "$app"',
    `out=$( (ACTIONS_RUNNER_INPUT_TOKEN=$KEEL_RUNNER_TOKEN; export ACTIONS_RUNNER_INPUT_TOKEN; HOME=${q(layout.home)}; export HOME; cd "$app" && exec setpriv --reuid="$uid" --regid="$gid" --init-groups ./config.sh --unattended --url ${q(runner.url)} --name ${q(layout.name)} --runnergroup ${q(runner.runner_group)} --labels ${q(layout.groupLabel)} --work ${q(layout.work)} --disableupdate --replace) 2>&1 )`,
    "rc=$?",
    'chown 0:0 "$app" && chmod 0755 "$app"',
    '[ "$rc" = 0 ] || fail configure "config.sh exited $rc: $(printf "%s" "$out" | tail -n 3)"',
    ...layout.stateFiles.map((f) => `if [ -e ${q(f)} ]; then chown ${owner} ${q(f)} && chmod 0600 ${q(f)}; fi`),
    ...layout.envFiles.map((f) => `if [ -e ${q(f)} ]; then chown 0:0 ${q(f)} && chmod 0644 ${q(f)}; fi`),
    `step configure ok ${q(`${runner.url} ${layout.name}`)}`,
    ...heredoc(layout.jobStarted, "0755", "0:0", renderJobHook(layout, "started")),
    ...heredoc(layout.jobCompleted, "0755", "0:0", renderJobHook(layout, "completed")),
    ...(layout.dropIn === null
      ? []
      : [
          `install -d -m 0755 -o 0 -g 0 ${q(layout.dropIn.replace(/\/[^/]+$/, ""))} || fail hooks "cannot create the drop-in directory"`,
          ...heredoc(layout.dropIn, "0644", "0:0", renderHooksDropIn(layout))
        ]),
    `step hooks ok ${q(layout.hooks)}`,
    `printf '%s' "$KEEL_SIGNING_SECRET" | put ${q(layout.signingSecretFile)} 0600 ${owner} || fail secret "cannot write the signing secret"`,
    `step secret ok ${q(`${layout.signingSecretFile} 0600`)}`,
    `printf '%s\\n' ${q(layout.gatewayUrl)} | put ${q(layout.gatewayUrlFile)} 0644 0:0 || fail gateway-files "cannot write the gateway URL"`,
    `printf '%s\\n' ${q(layout.agentId)} | put ${q(layout.agentIdFile)} 0644 0:0 || fail gateway-files "cannot write the agent id"`,
    `step gateway-files ok ${q(layout.gatewayUrl)}`,
    ...heredoc(layout.firewallFile, "0644", "0:0", firewall),
    `nft -c -f ${q(layout.firewallFile)} >/dev/null 2>&1 || fail firewall "nft -c refused ${layout.firewallFile}"`,
    `nft -f ${q(layout.firewallFile)} || fail firewall "nft -f ${layout.firewallFile} failed"`,
    `readback=$(nft -j list table inet ${table}) || fail firewall "table ${table} cannot be read back"`,
    'value firewall "$readback"',
    `step firewall applied ${q(`inet ${table}`)}`,
    ""
  ].join("\n")
}

/**
 * The gateway's grant (when the runner declares a control plane): the credential arrives as the second stdin line
 * and is written root-only (0600) — the gateway runs as root; the runner account cannot read it. Its routing file is
 * the host's own ctl's to write (`unit ensure`): it knows where its registry and data are.
 */
export const gatewayScript = (layout: RunnerLayout) => {
  if (layout.gateway === null) throw new Error(`${layout.name} declares no gateway`)
  return [
    ...prelude,
    putFunction,
    `printf '%s\\n' "$KEEL_SIGNING_SECRET" | put ${q(layout.gateway.grantFile)} 0600 0:0 || fail gateway-grant "cannot write the gateway's grant"`,
    `step gateway-grant ok ${q(`${layout.gateway.grantFile} 0600 root`)}`,
    ""
  ].join("\n")
}

/**
 * What `status` reads on the host: the account, every layout path by stat, anything under the root (outside the
 * runner's own directories) the account owns or may write, the firewall table, and the published files.
 */
export const statusScript = (layout: RunnerLayout) => {
  const owned = [...runnerOwned(layout), ...layout.stateFiles, layout.signingSecretFile]
  const checked = [
    layout.root,
    layout.app,
    ...runnerOwned(layout),
    layout.hooks,
    layout.jobStarted,
    layout.jobCompleted,
    ...layout.stateFiles,
    ...layout.envFiles,
    layout.signingSecretFile,
    layout.gatewayUrlFile,
    layout.agentIdFile,
    layout.firewallFile,
    layout.unit,
    ...(layout.dropIn === null ? [] : [layout.dropIn]),
    ...(layout.gateway === null ? [] : [layout.gateway.unit, layout.gateway.grantFile, layout.gateway.envFile])
  ]
  return [
    ...prelude,
    `account=${q(layout.account)}`,
    "uid=-",
    'if uid=$(id -u "$account" 2>/dev/null); then gid=$(id -g "$account"); value uid "$uid"; value gid "$gid"; else uid=-; value uid -; fi',
    `for f in ${checked.map(q).join(" ")}; do`,
    '  if [ -e "$f" ] || [ -L "$f" ]; then value stat "$(stat -c "%u %g %a %F" "$f")|$f"; else value stat "missing|$f"; fi',
    "done",
    'if [ "$uid" != - ]; then',
    `  find ${q(layout.root)} \\( ${owned.map((p) => `-path ${q(p)}`).join(" -o ")} \\) -prune -o ! -type l \\( -user "$uid" -o \\( -group "$gid" -perm -g+w \\) -o -perm -o+w \\) -printf 'KEEL-VALUE\\twritable\\t%U %G %m %p\\n' 2>/dev/null`,
    `  if ! nft list table inet "keel_runner_$uid" >/dev/null 2>&1 && [ -f ${q(layout.firewallFile)} ]; then`,
    "    # Re-asserted: a reboot or a ruleset flush (Debian's nftables.service) dropped the table.",
    `    nft -f ${q(layout.firewallFile)} >/dev/null 2>&1 && value firewall_reasserted yes`,
    "  fi",
    '  readback=$(nft -j list table inet "keel_runner_$uid" 2>/dev/null) && value firewall "$readback" || value firewall -',
    "fi",
    `[ -f ${q(layout.gatewayUrlFile)} ] && value gateway_url "$(cat ${q(layout.gatewayUrlFile)})"`,
    `[ -f ${q(layout.agentIdFile)} ] && value agent_id "$(cat ${q(layout.agentIdFile)})"`,
    "step read ok layout",
    ""
  ].join("\n")
}

/**
 * Unregisters the runner (`config.sh remove` with the removal token, as its account) and deletes the firewall
 * table, the hooks' drop-in, every file under the root and — unless it was there before the install (a rollback
 * keeps it) — the account; then checks each is gone. Steps that find nothing to remove say `absent`.
 */
export const removeScript = (layout: RunnerLayout, options: { readonly keepAccount: boolean }) =>
  [
    ...prelude,
    `account=${q(layout.account)}`,
    `app=${q(layout.app)}`,
    'uid=$(id -u "$account" 2>/dev/null || true)',
    'gid=$(id -g "$account" 2>/dev/null || true)',
    // The service is stopped already: the table goes first, so unregistering reaches a provider on any address.
    'if [ -n "$uid" ] && nft list table inet "keel_runner_$uid" >/dev/null 2>&1; then',
    '  nft delete table inet "keel_runner_$uid" && step firewall removed "inet keel_runner_$uid" || step firewall failed "nft delete table inet keel_runner_$uid"',
    'else step firewall absent "no table"; fi',
    'if [ -n "$uid" ] && [ -f "$app/.runner" ] && [ -x "$app/config.sh" ]; then',
    '  chown "$uid:$gid" "$app"',
    `  out=$( (ACTIONS_RUNNER_INPUT_TOKEN=$KEEL_RUNNER_TOKEN; export ACTIONS_RUNNER_INPUT_TOKEN; HOME=${q(layout.home)}; export HOME; cd "$app" && exec setpriv --reuid="$uid" --regid="$gid" --init-groups ./config.sh remove) 2>&1 )`,
    "  rc=$?",
    '  chown 0:0 "$app"',
    '  if [ "$rc" = 0 ]; then step unregister removed "config.sh remove"; else step unregister failed "config.sh remove exited $rc: $(printf "%s" "$out" | tail -n 3)"; fi',
    "else",
    '  step unregister absent "no configured runner on the host"',
    "fi",
    ...(layout.dropIn === null
      ? []
      : [
          `if [ -e ${q(layout.dropIn)} ]; then rm -f ${q(layout.dropIn)} && rmdir ${q(layout.dropIn.replace(/\/[^/]+$/, ""))} 2>/dev/null; step drop-in removed ${q(layout.dropIn)}; else step drop-in absent ${q(layout.dropIn)}; fi`
        ]),
    `if [ -e ${q(layout.root)} ]; then rm -rf ${q(layout.root)} && step files removed ${q(layout.root)} || step files failed ${q(layout.root)}; else step files absent ${q(layout.root)}; fi`,
    "rm -rf /var/tmp/keel-runner-archive.*",
    ...(options.keepAccount
      ? ['step account kept "it was there before the install"']
      : [
          'if [ -n "$uid" ]; then',
          '  pkill -KILL -u "$uid" 2>/dev/null; sleep 0.2',
          '  userdel "$account" && step account removed "uid $uid" || step account failed "userdel $account"',
          'else step account absent "no account"; fi'
        ]),
    'left=""',
    ...(options.keepAccount ? [] : ['id -u "$account" >/dev/null 2>&1 && left="$left account"']),
    `[ -e ${q(layout.root)} ] && left="$left ${layout.root}"`,
    ...(layout.dropIn === null ? [] : [`[ -e ${q(layout.dropIn)} ] && left="$left ${layout.dropIn}"`]),
    '[ -n "$uid" ] && nft list table inet "keel_runner_$uid" >/dev/null 2>&1 && left="$left firewall"',
    'if [ -z "$left" ]; then step verify ok "nothing remains"; else fail verify "still present:$left"; fi',
    ""
  ].join("\n")

export interface ScriptStep {
  readonly step: string
  readonly result: string
  readonly detail: string
}

/** A script's output: its steps in order, and its values (a repeated name keeps every value). */
export const parseScriptOutput = (stdout: string) => {
  const steps: Array<ScriptStep> = []
  const values = new Map<string, Array<string>>()
  for (const line of stdout.split("\n")) {
    const fields = line.split("\t")
    if (fields[0] === "KEEL-STEP" && fields.length >= 4)
      steps.push({ step: fields[1]!, result: fields[2]!, detail: fields.slice(3).join(" ") })
    else if (fields[0] === "KEEL-VALUE" && fields.length >= 3)
      values.set(fields[1]!, [...(values.get(fields[1]!) ?? []), fields.slice(2).join(" ")])
  }
  return { steps, values }
}
