import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ActionNotHeld, AuthorityUnavailable } from "../fleet/Authority.js"
import { ObjectHeadAnswer, ObjectListAnswer, ObjectNotFound, PreconditionFailed } from "../fleet/Objects.js"
import {
  ImmutableObjectWrite,
  InvalidObjectKey,
  ObjectStoreError,
  ObjectWriteUnauthorized,
  StorageFenced
} from "../shared/ObjectErrors.js"
import { IntegerFromString, RequestStruct } from "../shared/RequestSchema.js"
import { VaultDenied, VaultForbidden } from "../vault/Errors.js"
import { Bearer } from "./Common.js"
import { FleetAuth, RequiredAction } from "./FleetAuth.js"

/** The object key is the rest of the path after /api/objects/ (slashes included). */
const ObjectKeyPath = Schema.Struct({ "*": Schema.String })

export class ObjectsApi extends HttpApiGroup.make("objects")
  .add(
    HttpApiEndpoint.get("list", "/objects")
      .annotate(RequiredAction, "object-read")
      .setUrlParams(
        RequestStruct({
          prefix: Schema.optional(Schema.String),
          cursor: Schema.optional(Schema.String),
          limit: Schema.optional(
            IntegerFromString.pipe(
              Schema.int(),
              Schema.between(1, 1000),
              Schema.annotations({ message: () => "must be an integer from 1 to 1000" })
            )
          )
        })
      )
      .addSuccess(ObjectListAnswer)
      .annotate(
        OpenApi.Description,
        "Heads of the objects under `prefix`, in key order, `limit` (default 1000) a page; `next_cursor` (and a " +
          'Link rel="next" header) continues. Needs object-read.'
      )
      .middleware(FleetAuth)
  )
  .add(
    HttpApiEndpoint.get("get", "/objects/*")
      .annotate(RequiredAction, "object-read")
      .setPath(ObjectKeyPath)
      .addSuccess(HttpApiSchema.Uint8Array({ contentType: "application/octet-stream" }))
      .addError(ObjectNotFound)
      .addError(InvalidObjectKey)
      .annotate(
        OpenApi.Description,
        "The object's bytes, streamed; ETag and X-Object-Sha256 carry its SHA-256. Needs object-read."
      )
      .middleware(FleetAuth)
  )
  .add(
    HttpApiEndpoint.head("head", "/objects/*")
      .annotate(RequiredAction, "object-read")
      .setPath(ObjectKeyPath)
      .addSuccess(HttpApiSchema.Empty(200))
      .addError(ObjectNotFound)
      .addError(InvalidObjectKey)
      .annotate(OpenApi.Description, "The object's size, ETag and X-Object-Sha256, no body. Needs object-read.")
      .middleware(FleetAuth)
  )
  .add(
    HttpApiEndpoint.put("put", "/objects/*")
      .setPath(ObjectKeyPath)
      .setHeaders(
        Schema.Struct({
          authorization: Schema.optional(Schema.String),
          "if-none-match": Schema.optional(
            Schema.Literal("*").annotations({
              description: "Create only: 412 when the key exists",
              message: () => "must be * (create only); the object API takes no other If-None-Match"
            })
          ),
          "if-match": Schema.optional(
            Schema.String.pipe(
              Schema.pattern(/^"?[0-9a-f]{64}"?$/),
              Schema.annotations({
                description: "Replace only while the object's SHA-256 is this one: 412 otherwise",
                message: () => "must be the object's SHA-256 (64 lowercase hex digits, optionally quoted)"
              })
            )
          )
        })
      )
      .addSuccess(ObjectHeadAnswer)
      .addSuccess(ObjectHeadAnswer, { status: 201 })
      .addError(PreconditionFailed)
      .addError(ObjectWriteUnauthorized)
      .addError(ImmutableObjectWrite)
      .addError(StorageFenced)
      .addError(InvalidObjectKey)
      .annotate(
        OpenApi.Description,
        "Stores the request body (any bytes, streamed; at most KEEL_OBJECT_MAX_BYTES) at the key: 201 when " +
          "If-None-Match: * created it, 200 otherwise. Needs the key's write action (docs/control-plane.md)."
      )
  )
  .add(
    HttpApiEndpoint.del("delete", "/objects/*")
      .setPath(ObjectKeyPath)
      .setHeaders(Bearer)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(ObjectNotFound)
      .addError(ObjectWriteUnauthorized)
      .addError(ImmutableObjectWrite)
      .addError(StorageFenced)
      .addError(InvalidObjectKey)
      .annotate(
        OpenApi.Description,
        "Deletes the object: 204, or 404 when there is none. Needs the key's write action."
      )
  )
  // Reads are authorized by FleetAuth (object-read); a write or delete by the action its key's owner needs, which
  // follows the key the path names (docs/control-plane.md): the write routes read `Authorization` themselves.
  .addError(VaultDenied)
  .addError(VaultForbidden)
  .addError(ActionNotHeld)
  .addError(AuthorityUnavailable)
  // The store failed (a disk, the database): the request changed nothing it did not report.
  .addError(ObjectStoreError, { status: 503 })
  .annotate(OpenApi.Title, "Objects") {}
