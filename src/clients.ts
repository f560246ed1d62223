/**
 * `keel/clients`: the typed clients of every HTTP surface, alone (no service, no database driver, no node:fs):
 * what a browser bundle or another program imports to call Keel. They live with the contracts they are built
 * from (src/contracts/Clients.ts), so Keel's own services and commands import them there, not from this entry.
 */
export * from "./contracts/Clients.js"
