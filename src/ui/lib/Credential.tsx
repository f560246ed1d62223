import { useEffect, useState } from "preact/hooks"
import { CREDENTIAL_NAMES, type CredentialKind, credential, setCredential } from "./session.js"

/** The credential a page reads with, said on the page; entered once per tab (session storage). */
export const useCredential = (kind: CredentialKind) => {
  const [value, setValue] = useState(credential(kind))
  useEffect(() => {
    const update = () => setValue(credential(kind))
    window.addEventListener("keel-credentials", update)
    return () => window.removeEventListener("keel-credentials", update)
  }, [kind])
  return value
}

export const CredentialField = ({ kind, why }: { kind: CredentialKind; why: string }) => {
  const current = useCredential(kind)
  const [draft, setDraft] = useState("")
  return (
    <form
      class="credential"
      aria-label={CREDENTIAL_NAMES[kind]}
      onSubmit={(event) => {
        event.preventDefault()
        setCredential(kind, draft.trim())
        setDraft("")
      }}
    >
      <p>
        This page reads with a <strong>{CREDENTIAL_NAMES[kind]}</strong>: {why}.{" "}
        {current === undefined ? "None entered in this tab yet." : "One is kept for this tab."}
      </p>
      <label>
        {CREDENTIAL_NAMES[kind]}
        <input
          type="password"
          autocomplete="off"
          name={kind}
          value={draft}
          onInput={(event) => setDraft((event.target as HTMLInputElement).value)}
        />
      </label>
      <button type="submit">Use</button>
      {current !== undefined && (
        <button type="button" onClick={() => setCredential(kind, undefined)}>
          Forget
        </button>
      )}
    </form>
  )
}
