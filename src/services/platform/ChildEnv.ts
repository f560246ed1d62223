/**
 * The environment of every child process Keel starts (git, ssh, systemctl, launchctl, flock, a host
 * channel's local command, a queued job) is built, never copied: the names below from this process, plus
 * what the caller sets on purpose. Nothing else passes — in particular no `KEEL_*` setting (the vault
 * master key, tokens, admin secrets) and no `GT_*` secret. docs/security.md lists the same names.
 */
export const INHERITED_ENV: ReadonlyArray<string> = [
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "LANG",
  "LANGUAGE",
  "TZ",
  "TERM",
  "TMPDIR",
  "NO_COLOR",
  // `systemctl --user` and `launchctl` reach the user's service manager through these.
  "XDG_RUNTIME_DIR",
  "DBUS_SESSION_BUS_ADDRESS"
]

const inherited = (name: string) => INHERITED_ENV.includes(name) || /^LC_[A-Z_]+$/.test(name)

/** Secrets Keel reads from its environment; never handed to a child, even when a caller names them. */
export const SECRET_ENV: ReadonlyArray<string> = [
  "KEEL_VAULT_KEY",
  "KEEL_ADMIN_TOKENS",
  "GT_TOKENS",
  "GT_LLM_API_KEY",
  "GT_EMBEDDINGS_API_KEY"
]

/**
 * Whether a setting that is no secret by name holds one in its value: a URL with a user or password in it
 * (`KEEL_REGISTRY` may carry a token: docs/beacon.md) or the alert webhook, whose path is its secret (Slack-style
 * hooks). Keel itself reads them; a process's environment block must not show them (EnvironBlock.ts).
 */
export const carriesCredential = (name: string, value: string) =>
  name === "KEEL_ALERT_WEBHOOK_URL" || /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i.test(value.trim())

/** Whether `name` may never be set on a child: a known secret, any `KEEL_*`, or one listed in KEEL_SECRET_ENV. */
export const isSecretEnvName = (name: string, parent: NodeJS.ProcessEnv = process.env) =>
  SECRET_ENV.includes(name) ||
  name.startsWith("KEEL_") ||
  (parent.KEEL_SECRET_ENV ?? "")
    .split(",")
    .map((n) => n.trim())
    .includes(name)

/** A child's environment: the inherited allow-list from `parent`, then `extra` minus any secret name. */
export const childEnv = (
  extra: Readonly<Record<string, string>> = {},
  parent: NodeJS.ProcessEnv = process.env
): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(parent)) if (value !== undefined && inherited(name)) env[name] = value
  for (const [name, value] of Object.entries(extra)) if (!isSecretEnvName(name, parent)) env[name] = value
  return env
}

/**
 * The environment of a process that is Keel itself, detached to outlive its caller (a handoff worker): the
 * allow-list plus Keel's own `KEEL_*` settings, since it reads the same configuration — minus every secret
 * (SECRET_ENV, KEEL_SECRET_ENV): a secret it needs it reads from its file, as its parent did.
 */
export const selfEnv = (parent: NodeJS.ProcessEnv = process.env): Record<string, string> => {
  const env = childEnv({}, parent)
  const named = (parent.KEEL_SECRET_ENV ?? "").split(",").map((n) => n.trim())
  for (const [name, value] of Object.entries(parent))
    if (value !== undefined && name.startsWith("KEEL_") && !SECRET_ENV.includes(name) && !named.includes(name))
      env[name] = value
  return env
}
