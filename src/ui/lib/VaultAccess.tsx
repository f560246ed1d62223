import { useState } from "preact/hooks"
import type { Refusal } from "./api.js"
import { api } from "./api.js"
import { CredentialField } from "./Credential.js"
import { Refused } from "./Refused.js"
import { setCredential } from "./session.js"

/** What the vault said of the token it issued (not secret; kept in memory only, never in storage). */
interface Issued {
  readonly consumer: string
  readonly actions: ReadonlyArray<string>
  readonly hosts: ReadonlyArray<string>
  readonly expires_at: string
}

/**
 * The control plane's credential on a page (docs/vault.md): a vault token pasted as it is, or a grant credential
 * (`ctl vault grant create --out FILE`: its grant_id, consumer and secret) exchanged here through the typed vault
 * client (`POST /v1/vault/token`). Only the token is kept, in this tab's session storage; the secret is sent once and
 * dropped from the form.
 */
export const VaultAccess = ({ why }: { why: string }) => {
  const [grantId, setGrantId] = useState("")
  const [consumer, setConsumer] = useState("")
  const [secret, setSecret] = useState("")
  const [busy, setBusy] = useState(false)
  const [issued, setIssued] = useState<Issued | undefined>(undefined)
  const [refusal, setRefusal] = useState<Refusal | undefined>(undefined)
  const exchange = async () => {
    setBusy(true)
    setRefusal(undefined)
    const outcome = await api.vault((client) =>
      client.tokens.exchange({
        payload: { grant_id: grantId.trim(), consumer: consumer.trim(), secret: secret.trim() }
      })
    )
    setBusy(false)
    setSecret("")
    if (outcome.ok) {
      const { token, ...rest } = outcome.value
      setCredential("vault", token)
      setIssued(rest)
    }
    // A decoded error class carries its code, not its status: the vault's exchange refuses only with 401.
    else
      setRefusal(
        outcome.refusal.code === "VAULT_DENIED"
          ? { ...outcome.refusal, status: 401, detail: `the vault refused this grant (${outcome.refusal.detail})` }
          : outcome.refusal
      )
  }
  return (
    <div class="vault-access">
      <CredentialField kind="vault" why={why} />
      <details class="credential">
        <summary>Or exchange a grant credential for a token</summary>
        <form
          aria-label="grant exchange"
          onSubmit={(event) => {
            event.preventDefault()
            void exchange()
          }}
        >
          <p class="muted">
            The file <code>ctl vault grant create --consumer C --action A --host H --out FILE</code> wrote holds these
            three. The secret is sent once to <code>/v1/vault/token</code>; only the short-lived token is kept.
          </p>
          <label>
            grant id
            <input
              name="grant_id"
              autocomplete="off"
              value={grantId}
              onInput={(e) => setGrantId((e.target as HTMLInputElement).value)}
            />
          </label>
          <label>
            consumer
            <input
              name="consumer"
              autocomplete="off"
              value={consumer}
              onInput={(e) => setConsumer((e.target as HTMLInputElement).value)}
            />
          </label>
          <label>
            secret
            <input
              name="secret"
              type="password"
              autocomplete="off"
              value={secret}
              onInput={(e) => setSecret((e.target as HTMLInputElement).value)}
            />
          </label>
          <button type="submit" disabled={busy}>
            Exchange
          </button>
        </form>
        {issued !== undefined && (
          <p class="good" role="status">
            Token issued to {issued.consumer} until {issued.expires_at}: actions {issued.actions.join(", ") || "none"}
            {"; "}hosts {issued.hosts.join(", ") || "none"}.
          </p>
        )}
        {refusal !== undefined && <Refused refusal={refusal} />}
      </details>
    </div>
  )
}
