import { Schema } from "effect"

/**
 * `ctl vault grant create` refused: an action no registry knows, a host that is not a registry target
 * (or no registry to check it against), an item the vault does not hold, a credential file that
 * already exists (without `--force`) or could not be written. Nothing is granted when it is refused.
 */
export class GrantRefused extends Schema.TaggedError<GrantRefused>()("GrantRefused", {
  code: Schema.Literal(
    "UNKNOWN_ACTION",
    "UNKNOWN_HOST",
    "UNKNOWN_ITEM",
    "SECRET_FIELD_NOT_ALLOWED",
    "REGISTRY_UNAVAILABLE",
    "CREDENTIAL_FILE_EXISTS",
    "CREDENTIAL_WRITE_FAILED"
  ),
  detail: Schema.String
}) {}
