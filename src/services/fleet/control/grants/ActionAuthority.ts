import { Effect } from "effect"
import { ActionNotHeld, AuthorityUnavailable } from "../../../../contracts/fleet/Authority.js"
import { VaultDenied } from "../../../../contracts/vault/Errors.js"
import type { Grant } from "../../../../contracts/vault/Schemas.js"
import { Vault } from "../../../platform/vault/Vault.js"
import type { FleetAction } from "../../shared/registry/Schema.js"
import { AuthorityRegistry } from "../registry/AuthorityRegistry.js"

export interface ActionNeed {
  readonly action: FleetAction
  /** The registry target the request acts on, when it acts on one. */
  readonly host?: string
}

/**
 * The one authorization rule of the control plane (Vault policies + the registry as the authority):
 * a request is allowed when its vault token's grant holds the action (for the target, when there is one)
 * **and** the registry lists the grant's consumer under `actions[action]`. A missing, unknown or expired
 * token is 401 `VAULT_DENIED`; a grant without the action or the target is 403 `VAULT_FORBIDDEN` (audited
 * by the vault); a consumer the registry does not list is 403 `ACTION_NOT_HELD` (logged); an unreadable
 * registry is 503 `REGISTRY_UNAVAILABLE`. Revoking a consumer is one registry change, whatever grants exist.
 * The registry is the snapshot AuthorityRegistry holds: no request waits on git.
 */
export class ActionAuthority extends Effect.Service<ActionAuthority>()("fleet/ActionAuthority", {
  effect: Effect.gen(function* () {
    const vault = yield* Vault
    const registry = yield* AuthorityRegistry

    const authorize = Effect.fn("ActionAuthority.authorize")(function* (token: string | undefined, need: ActionNeed) {
      if (token === undefined || token.length === 0)
        return yield* new VaultDenied({
          code: "VAULT_DENIED",
          detail: "a bearer token from the vault is required (Authorization: Bearer <token>)"
        })
      const grant: Grant = yield* vault.authorize(token, {
        action: need.action,
        ...(need.host === undefined ? {} : { host: need.host })
      })
      const snapshot = yield* registry.current.pipe(
        Effect.mapError(
          (error) =>
            new AuthorityUnavailable({
              code: "REGISTRY_UNAVAILABLE",
              detail: `the registry cannot be read to authorize ${need.action}: ${error.detail}`
            })
        )
      )
      const holders: ReadonlyArray<string> = snapshot.registry.actions[need.action] ?? []
      if (!holders.includes(grant.consumer)) {
        yield* Effect.logWarning("action refused: the registry does not list the consumer").pipe(
          Effect.annotateLogs({ action: need.action, consumer: grant.consumer, grant: grant.id })
        )
        return yield* new ActionNotHeld({
          code: "ACTION_NOT_HELD",
          action: need.action,
          consumer: grant.consumer,
          detail: `${grant.consumer} does not hold ${need.action} in the registry (actions.${need.action})`
        })
      }
      return grant
    })

    return {
      authorize,
      /** The registry authorization reads (for what a request checks against it next, without another read). */
      registry: registry.current
    } as const
  }),
  dependencies: [AuthorityRegistry.Default]
}) {}
