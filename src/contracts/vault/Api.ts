import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { problemOpenApi } from "../shared/ProblemContract.js"
import { VaultCorrupt, VaultDenied, VaultForbidden, VaultItemNotFound } from "./Errors.js"
import { GrantCredential, TokenAnswer } from "./Schemas.js"

/**
 * Every vault answer is marked uncacheable (`Cache-Control: no-store`, `Pragma: no-cache`): token and
 * item answers carry secrets, and refusals are not worth keeping either. It runs before the request is
 * decoded, so 400s carry the headers too.
 */
export class VaultNoStore extends HttpApiMiddleware.Tag<VaultNoStore>()("VaultNoStore") {}

const Bearer = Schema.Struct({ authorization: Schema.optional(Schema.String) })
const Segment = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/))

export class VaultTokensApi extends HttpApiGroup.make("tokens")
  .add(
    HttpApiEndpoint.post("exchange", "/token")
      // Every invalid field listed at once, as every other request body (docs/errors.md).
      .setPayload(GrantCredential.annotations({ parseOptions: { errors: "all" } }))
      .addSuccess(TokenAnswer)
      .addError(VaultDenied)
      .annotate(OpenApi.Description, "Exchanges a grant credential for a short-lived token scoped to that grant.")
  )
  .add(
    HttpApiEndpoint.get("read", "/items/:item/:field")
      .setPath(Schema.Struct({ item: Segment, field: Segment }))
      .setHeaders(Bearer)
      .addSuccess(Schema.Struct({ value: Schema.String }))
      .addError(VaultDenied)
      .addError(VaultForbidden)
      .addError(VaultItemNotFound)
      .addError(VaultCorrupt)
      .annotate(OpenApi.Description, "Reads item#field with a token whose grant names the item.")
  )
  .annotate(OpenApi.Title, "Tokens and reads") {}

/** The embedded secret vault's consumer API (admin operations are `ctl vault` only). */
export class VaultApi extends HttpApi.make("vault")
  .add(VaultTokensApi)
  .middleware(VaultNoStore)
  .prefix("/v1/vault")
  .annotate(OpenApi.Title, "Keel secret vault")
  .annotate(OpenApi.Transform, problemOpenApi)
  .annotate(OpenApi.Description, "Grant credentials for short-lived tokens; item reads by authorized consumers.") {}
