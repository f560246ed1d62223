import { Effect, Option, Stream } from "effect"
import { ObjectNotFound, PreconditionFailed } from "../../../../contracts/fleet/Objects.js"
import { ObjectStoreError, ObjectWriteUnauthorized } from "../../../../contracts/shared/ObjectErrors.js"
import { ObjectGateway } from "../../../platform/objects/ObjectGateway.js"
import { checkKey, type ObjectHead, type WriteCondition } from "../../../platform/objects/ObjectStore.js"
import { ActionAuthority, type ActionNeed } from "../grants/ActionAuthority.js"
import { PUBLISHED_FILES } from "../releases/ReleasePublisher.js"
import {
  headAnswer,
  headHeaders,
  nextPageLink,
  objectKeyOfUrl,
  writeCondition,
  writtenHeaders
} from "./ObjectRequests.js"

const HOST_OBJECT = /^host_health\/([^/]+)\.json$/
const RELEASE_FILE = /^releases\/[^/]+\/[^/]+\/([^/]+)$/
const DEPLOYMENT_RECORD = /^releases\/[^/]+\/[^/]+\/deployments\//
const HOST_STATE = /^state\/(capacity|janitor)\/([^/]+)\.json$/

/**
 * The registry action an object request needs. Reads need `object-read`. Writes and deletes need the
 * action of the key's owner: a host's beacon `host-health-write` and its state publications
 * (`state/capacity/<host>.json`, `state/janitor/<host>.json`) `host-state-write`, both for that host; release
 * objects `release-submit`; anything else `object-write`.
 */
export const objectAction = (key: string, mode: "read" | "write"): ActionNeed => {
  if (mode === "read") return { action: "object-read" }
  const beacon = HOST_OBJECT.exec(key)
  if (beacon !== null) return { action: "host-health-write", host: beacon[1]! }
  const state = HOST_STATE.exec(key)
  if (state !== null) return { action: "host-state-write", host: state[2]! }
  if (key.startsWith("releases/") || key.startsWith("release-runs/")) return { action: "release-submit" }
  return { action: "object-write" }
}

/** A write whose condition did not hold (nothing was written): the object's SHA-256 now, null when absent. */
const preconditionFailed = (
  key: string,
  condition: Exclude<WriteCondition, { kind: "always" }>,
  head: Option.Option<ObjectHead>
) => {
  const current = Option.getOrNull(Option.map(head, (h) => h.sha256))
  return new PreconditionFailed({
    code: "PRECONDITION_FAILED",
    key,
    current_sha256: current,
    detail:
      condition.kind === "absent"
        ? `${key} already exists (If-None-Match: *)`
        : current === null
          ? `${key} does not exist (If-Match)`
          : `${key} has SHA-256 ${current}, not ${condition.sha256} (If-Match)`
  })
}

const cursorOf = (key: string) => Buffer.from(key, "utf8").toString("base64url")
const keyOfCursor = (cursor: string) => Buffer.from(cursor, "base64url").toString("utf8")

/**
 * The object API's logic (S3-like, over the object gateway), from the request as sent (its URL, its condition
 * headers, its body stream) to the answer's parts (JSON, headers, a byte stream): the key is read from the path
 * and checked, then the gateway's namespace and immutability rules apply. Reads were authorized by FleetAuth
 * (`object-read`); a write is authorized here, by the action of the key's owner, before its key is checked.
 */
export class ObjectAccess extends Effect.Service<ObjectAccess>()("fleet/ObjectAccess", {
  effect: Effect.gen(function* () {
    const authority = yield* ActionAuthority
    const gateway = yield* ObjectGateway

    /**
     * A write's credentials first (an unauthenticated caller learns nothing), then the key itself. Reads are
     * authorized by FleetAuth (object-read, whatever the key); a write's action follows its key, which the
     * middleware does not read.
     */
    const allowWrite = (token: string | undefined, key: string) =>
      Effect.zipRight(authority.authorize(token, objectAction(key, "write")), checkKey(key))

    /**
     * Keys the object API never writes, because another writer owns them and a raw write would bypass its
     * rules: a beacon (PUT /api/host-health validates it against the registry and never stores an older one; a
     * delete would undo that guard), and a version's published files (`source-revision.json`, the archive,
     * qualification, signature and `release.json`, the commit marker: written only by the signed, ordered
     * publication — one written here first would make it conflict, and an immutable object is never taken back),
     * and a rollout's deployment records (one planted first would be taken for the rollout's completion).
     */
    const ownedElsewhere = (key: string, mode: "write" | "delete") => {
      const release = RELEASE_FILE.exec(key)?.[1]
      const why = HOST_OBJECT.test(key)
        ? "is a host's beacon: it is written through PUT /api/host-health (validated, never older than the stored one) and cleared with ctl host beacon clear"
        : mode === "write" && release !== undefined && (PUBLISHED_FILES as ReadonlyArray<string>).includes(release)
          ? "is a published release file: only the release's signed publication writes it (ctl release submit)"
          : mode === "write" && DEPLOYMENT_RECORD.test(key)
            ? "is a rollout's deployment record: only the rollout writes it, once every declared target reports the release (ctl release rollout)"
            : undefined
      return why === undefined
        ? Effect.void
        : Effect.fail(new ObjectWriteUnauthorized({ code: "OBJECT_WRITE_UNAUTHORIZED", key, detail: `${key} ${why}` }))
    }

    const notFound = (key: string) => new ObjectNotFound({ code: "OBJECT_NOT_FOUND", key, detail: `no object ${key}` })

    /** The key a read names (`url`: the request's, as sent); its action, object-read, was checked by FleetAuth. */
    const readKey = (url: string) => Effect.flatMap(objectKeyOfUrl(url), checkKey)

    /** The object's headers, Content-Length included (HEAD answers them without a body). */
    const head = Effect.fn("ObjectAccess.head")(function* (url: string) {
      const key = yield* readKey(url)
      const found = yield* gateway.head(key)
      if (Option.isNone(found)) return yield* notFound(key)
      return { ...headHeaders(found.value), "content-length": String(found.value.size) }
    })

    /** The object's bytes (a stream), its size and headers. */
    const read = Effect.fn("ObjectAccess.read")(function* (url: string) {
      const key = yield* readKey(url)
      const found = yield* gateway.read(key)
      if (Option.isNone(found)) return yield* notFound(key)
      return { body: found.value.body, size: found.value.head.size, headers: headHeaders(found.value.head) }
    })

    /**
     * Stores `body` at the key `url` names, under the condition its headers set: the key's write action first
     * (its owner's: the action follows the key, see objectAction), then the key itself. Answers the status (201
     * when `If-None-Match: *` created it), the head as JSON and its ETag.
     */
    const write = Effect.fn("ObjectAccess.write")(function* (
      token: string | undefined,
      url: string,
      body: Stream.Stream<Uint8Array, unknown>,
      headers: Parameters<typeof writeCondition>[0]
    ) {
      const key = yield* objectKeyOfUrl(url)
      const condition = writeCondition(headers)
      yield* allowWrite(token, key)
      yield* ownedElsewhere(key, "write")
      // A body that cannot be read to its end (the client went away) stores nothing.
      const bytes = Stream.mapError(
        body,
        () =>
          new ObjectStoreError({
            code: "OBJECT_STORE_ERROR",
            key,
            detail: "the request body could not be read to its end"
          })
      )
      const outcome = yield* gateway.write(key, bytes, condition)
      if (!outcome.written && condition.kind !== "always")
        return yield* preconditionFailed(key, condition, outcome.head)
      const stored = Option.getOrThrow(outcome.head)
      const created = outcome.written && condition.kind === "absent"
      return { status: created ? 201 : 200, body: headAnswer(stored), headers: writtenHeaders(stored) }
    })

    const remove = Effect.fn("ObjectAccess.delete")(function* (token: string | undefined, url: string) {
      const key = yield* objectKeyOfUrl(url)
      yield* allowWrite(token, key)
      yield* ownedElsewhere(key, "delete")
      if (!(yield* gateway.delete(key))) return yield* notFound(key)
    })

    /** A page of heads under `prefix` (default all), after the cursor, at most `limit` (default 1000), as JSON. */
    const list = Effect.fn("ObjectAccess.list")(function* (query: {
      readonly prefix?: string | undefined
      readonly cursor?: string | undefined
      readonly limit?: number | undefined
    }) {
      const prefix = query.prefix ?? ""
      const limit = query.limit ?? 1000
      // One more than the page says whether another follows.
      const heads = yield* gateway.list(prefix, {
        after: query.cursor === undefined ? undefined : keyOfCursor(query.cursor),
        limit: limit + 1
      })
      const objects = heads.slice(0, limit)
      const last = objects.at(-1)
      const next = heads.length > limit && last !== undefined ? cursorOf(last.key) : null
      return {
        body: { objects: objects.map(headAnswer), next_cursor: next },
        /** The `Link` header continuing the listing, when a page follows. */
        link: next === null ? undefined : nextPageLink(prefix, limit, next)
      }
    })

    return { head, read, write, delete: remove, list } as const
  })
}) {}
