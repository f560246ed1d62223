import { useState } from "preact/hooks"
import type { ReconcilePhase } from "../../../contracts/fleet/Handoff.js"
import { ReconcilePhases } from "../../../contracts/fleet/Handoff.js"
import "../fleet/fleet.css"
import { callControlPlane } from "../../lib/controlPlane.js"
import { navigate } from "../../lib/route.js"
import { VaultAccess } from "../../lib/VaultAccess.js"

/**
 * The handoff sheet (seed 002, handoff rules 3 and 4; docs/handoff.md): one storage-root handoff transaction of one
 * target, phase by phase. It records the dashboard's address and the host when it opens; it shows each phase's
 * equivalent `ctl host storage-root-reconcile` command (copyable, never launched); it sends a phase only when the
 * operator clicks it — nothing here issues Status or another phase on its own, no polling, no follow-up; and every
 * answer stays on the sheet: the HTTP status, the raw bytes, the product exit, the refusal and the report, none
 * replaced by a later answer or error.
 *
 * The phases go through the typed control-plane client (`storage.status`, `storage.apply`), the query fields added
 * to its request; `callControlPlane` keeps the status and the raw bytes read off the response before the typed
 * decode, because the decode alone keeps neither (a problem body becomes an error class, a 200 a parsed value).
 */

const WHY =
  "GET phase=status needs a grant holding storage-reconcile-read for the target, the POST phases (run, resume, " +
  "rollback, finalize) storage-reconcile-apply; the registry must list the grant's consumer under the action"

/** A word as a POSIX shell reads it back unchanged (single-quoted unless it is plainly safe). */
const shellWord = (word: string) =>
  /^[A-Za-z0-9._@%+=:,/-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`

export const cliCommand = (origin: string, target: string, transaction: string, phase: ReconcilePhase) =>
  `KEEL_CONTROL_PLANE_URL=${shellWord(origin)} ctl host storage-root-reconcile ${shellWord(target)} ` +
  `--transaction ${shellWord(transaction)} --phase ${phase}`

type Decoded =
  | {
      readonly kind: "report"
      readonly exit_code: number
      readonly refusal: string | null
      readonly report: unknown
    }
  | { readonly kind: "problem"; readonly code: string; readonly detail: string }

interface Attempt {
  readonly n: number
  readonly phase: ReconcilePhase
  readonly method: "GET" | "POST"
  readonly transaction: string
  readonly sentAt: string
  readonly status: number | undefined
  readonly raw: string | undefined
  readonly decoded: Decoded
}

const pretty = (value: unknown) => JSON.stringify(value, null, 2)

const Answer = ({ attempt }: { attempt: Attempt }) => (
  <li class="answer" data-answer={attempt.n} data-phase={attempt.phase} data-status={attempt.status ?? "none"}>
    <p>
      <strong>
        #{attempt.n} {attempt.method} phase={attempt.phase}
      </strong>{" "}
      (transaction <code>{attempt.transaction}</code>, sent {attempt.sentAt}) → HTTP{" "}
      <strong data-field="status" class={attempt.status === 200 ? "good" : "bad"}>
        {attempt.status ?? "no answer"}
      </strong>
    </p>
    {attempt.decoded.kind === "report" ? (
      <dl class="facts">
        <dt>exit_code</dt>
        <dd data-field="exit_code">{attempt.decoded.exit_code}</dd>
        <dt>refusal</dt>
        <dd data-field="refusal">{attempt.decoded.refusal ?? "none"}</dd>
      </dl>
    ) : (
      <p data-field="problem" class="bad">
        {attempt.decoded.code}: {attempt.decoded.detail}
      </p>
    )}
    <details open={attempt.decoded.kind === "report"}>
      <summary>report</summary>
      {attempt.decoded.kind === "report" ? (
        <pre data-field="report">{pretty(attempt.decoded.report)}</pre>
      ) : (
        <p class="muted">no product report in this answer</p>
      )}
    </details>
    <p class="muted">raw bytes ({attempt.raw === undefined ? "none" : `${new Blob([attempt.raw]).size} bytes`}):</p>
    <pre data-field="raw">{attempt.raw ?? ""}</pre>
  </li>
)

const Command = ({ command }: { command: string }) => {
  const [copied, setCopied] = useState<string | undefined>(undefined)
  return (
    <div class="command">
      <code data-field="command">{command}</code>{" "}
      <button
        type="button"
        class="secondary"
        onClick={() => {
          const clipboard = navigator.clipboard as Clipboard | undefined
          if (clipboard === undefined) return setCopied("select the command to copy it")
          clipboard.writeText(command).then(
            () => setCopied("copied"),
            () => setCopied("select the command to copy it")
          )
        }}
      >
        Copy
      </button>{" "}
      <span class="muted" role="status">
        {copied ?? ""}
      </span>
    </div>
  )
}

const Sheet = ({ target, initialTransaction }: { target: string; initialTransaction: string }) => {
  // Recorded once, when the sheet opens (rule 4): later renders never change it.
  const [opened] = useState(() => ({
    address: window.location.origin,
    host: target,
    transaction: initialTransaction,
    at: new Date().toISOString()
  }))
  const [transaction, setTransaction] = useState(initialTransaction)
  const [attempts, setAttempts] = useState<ReadonlyArray<Attempt>>([])
  const [sending, setSending] = useState<ReconcilePhase | undefined>(undefined)
  const lastReport = attempts.find((attempt) => attempt.decoded.kind === "report")
  const lastError = attempts.find((attempt) => attempt.status !== 200)

  const send = async (phase: ReconcilePhase) => {
    setSending(phase)
    const sentAt = new Date().toISOString()
    const read = await callControlPlane(
      (client) => (phase === "status" ? client.storage.status() : client.storage.apply()),
      { urlParams: { target, transaction, phase } }
    )
    const decoded: Decoded = read.ok
      ? { kind: "report", exit_code: read.value.exit_code, refusal: read.value.refusal, report: read.value.report }
      : { kind: "problem", code: read.refusal.code, detail: read.refusal.detail }
    setAttempts((previous) => [
      {
        n: previous.length + 1,
        phase,
        method: phase === "status" ? "GET" : "POST",
        transaction,
        sentAt,
        status: read.wire.status,
        raw: read.wire.raw,
        decoded
      },
      ...previous
    ])
    setSending(undefined)
  }

  return (
    <section class="fleet-page">
      <p>
        <a href="/ui/handoff">← another handoff</a>
      </p>
      <h1>Handoff sheet: {target}</h1>
      <dl class="facts opened" aria-label="recorded when the sheet opened">
        <dt>dashboard address</dt>
        <dd data-field="address">{opened.address}</dd>
        <dt>host</dt>
        <dd data-field="host">{opened.host}</dd>
        <dt>transaction</dt>
        <dd>{opened.transaction || "none given"}</dd>
        <dt>opened at</dt>
        <dd data-field="opened-at">{opened.at}</dd>
      </dl>
      <VaultAccess why={WHY} />
      <p class="warning">
        Nothing here is sent on its own: each phase goes to the control plane only when you press its button, and Status
        is never read for you. Accepted is not completion — after Run, Resume, Rollback or Finalize, press Status to
        read the transaction's report.
      </p>
      <label>
        transaction
        <input
          name="transaction"
          autocomplete="off"
          value={transaction}
          onInput={(event) => {
            const value = (event.target as HTMLInputElement).value
            setTransaction(value)
            window.history.replaceState(
              null,
              "",
              `/ui/handoff/${encodeURIComponent(target)}?transaction=${encodeURIComponent(value)}`
            )
          }}
        />
      </label>
      <table class="phases" aria-label="phases">
        <thead>
          <tr>
            <th>phase</th>
            <th>the same request from a shell (not run by this page)</th>
          </tr>
        </thead>
        <tbody>
          {ReconcilePhases.map((phase) => (
            <tr data-phase={phase}>
              <td>
                <button type="button" disabled={sending !== undefined} onClick={() => void send(phase)}>
                  Send {phase}
                </button>
                <br />
                <span class="muted">{phase === "status" ? "GET" : "POST"}</span>
              </td>
              <td>
                <Command command={cliCommand(opened.address, target, transaction, phase)} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <p class="muted">
        The command reads your grant from <code>KEEL_GRANT_FILE</code> and exits with the report's exit_code (a refusal
        of the request itself, 400, 401 or 503, exits 1).
      </p>
      <p role="status" class="muted">
        {sending !== undefined ? `sending ${sending}…` : `${attempts.length} answer(s) on this sheet`}
      </p>
      <div class="grid two">
        <section aria-labelledby="last-report-heading" class="retained">
          <h2 id="last-report-heading">Last product report (HTTP 200)</h2>
          {lastReport === undefined || lastReport.decoded.kind !== "report" ? (
            <p class="muted">None yet.</p>
          ) : (
            <div data-retained="report">
              <p>
                From #{lastReport.n} phase={lastReport.phase}, transaction <code>{lastReport.transaction}</code>
              </p>
              <dl class="facts">
                <dt>product exit (exit_code)</dt>
                <dd data-field="exit_code">{lastReport.decoded.exit_code}</dd>
                <dt>refusal</dt>
                <dd data-field="refusal">{lastReport.decoded.refusal ?? "none"}</dd>
              </dl>
              <pre data-field="report">{pretty(lastReport.decoded.report)}</pre>
            </div>
          )}
        </section>
        <section aria-labelledby="last-error-heading" class="retained">
          <h2 id="last-error-heading">Last error</h2>
          {lastError === undefined ? (
            <p class="muted">None yet.</p>
          ) : (
            <div data-retained="error">
              <p>
                #{lastError.n} {lastError.method} phase={lastError.phase}: HTTP{" "}
                <strong data-field="status">{lastError.status ?? "no answer"}</strong>
              </p>
              {lastError.decoded.kind === "problem" && (
                <p data-field="problem">
                  {lastError.decoded.code}: {lastError.decoded.detail}
                </p>
              )}
              <pre data-field="raw">{lastError.raw ?? ""}</pre>
            </div>
          )}
        </section>
      </div>
      <h2>Every answer, newest first</h2>
      <ul class="answers" aria-label="answers">
        {attempts.map((attempt) => (
          <Answer attempt={attempt} />
        ))}
      </ul>
    </section>
  )
}

const Opener = () => {
  const [target, setTarget] = useState("")
  const [transaction, setTransaction] = useState("")
  return (
    <section class="fleet-page">
      <h1>Handoff sheet</h1>
      <p>
        A storage-root handoff (docs/handoff.md), phase by phase. Opening a sheet sends nothing; it records this
        dashboard's address and the host.
      </p>
      <form
        aria-label="open a handoff sheet"
        onSubmit={(event) => {
          event.preventDefault()
          if (target.trim() === "") return
          navigate(`handoff/${encodeURIComponent(target.trim())}?transaction=${encodeURIComponent(transaction.trim())}`)
        }}
      >
        <label>
          target (host)
          <input name="target" value={target} onInput={(e) => setTarget((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          transaction
          <input
            name="transaction"
            value={transaction}
            onInput={(e) => setTransaction((e.target as HTMLInputElement).value)}
          />
        </label>
        <button type="submit">Open the sheet</button>
      </form>
    </section>
  )
}

/** /ui/handoff: open a sheet; /ui/handoff/TARGET?transaction=ID: the sheet. */
export const HandoffPage = ({ rest }: { readonly rest: ReadonlyArray<string> }) => {
  if (rest[0] === undefined) return <Opener />
  const target = decodeURIComponent(rest[0])
  const transaction = new URLSearchParams(window.location.search).get("transaction") ?? ""
  return <Sheet key={target} target={target} initialTransaction={transaction} />
}
