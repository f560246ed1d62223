/**
 * The credentials a page needs, entered once and kept in this tab's session storage (docs/dashboard.md): the
 * control plane's vault token (from a grant exchange), the product readout's admin token, a trader's API key. Never
 * in local storage, a cookie or a URL; closing the tab forgets them.
 */
export type CredentialKind = "vault" | "admin" | "apiKey"

const KEY = (kind: CredentialKind) => `keel.${kind}`

export const credential = (kind: CredentialKind): string | undefined => {
  const value = sessionStorage.getItem(KEY(kind))
  return value === null || value === "" ? undefined : value
}

export const setCredential = (kind: CredentialKind, value: string | undefined) => {
  if (value === undefined || value === "") sessionStorage.removeItem(KEY(kind))
  else sessionStorage.setItem(KEY(kind), value)
  window.dispatchEvent(new Event("keel-credentials"))
}

/** What each kind is called on the pages that ask for it. */
export const CREDENTIAL_NAMES: Record<CredentialKind, string> = {
  vault: "vault token (control plane)",
  admin: "admin token (product readout)",
  apiKey: "API key (trading)"
}
