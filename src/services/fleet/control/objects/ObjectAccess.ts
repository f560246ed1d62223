import { Effect, Option, type Stream } from "effect"
import { ObjectNotFound, PreconditionFailed } from "../../../../contracts/fleet/Objects.js"
import { ObjectWriteUnauthorized } from "../../../../contracts/shared/ObjectErrors.js"
import { ObjectGateway } from "../../../platform/objects/ObjectGateway.js"
import { checkKey, type ObjectHead, type WriteCondition } from "../../../platform/objects/ObjectStore.js"
import { ActionAuthority, type ActionNeed } from "../grants/ActionAuthority.js"
import { PUBLISHED_FILES } from "../releases/ReleasePublisher.js"

/** What a listing page answers: heads in key order and the cursor of the next page (null on the last). */
export interface ObjectPage {
  readonly objects: ReadonlyArray<ObjectHead>
  readonly next: string | null
}

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

const cursorOf = (key: string) => Buffer.from(key, "utf8").toString("base64url")
const keyOfCursor = (cursor: string) => Buffer.from(cursor, "base64url").toString("utf8")

/**
 * The object API's logic (S3-like, over the object gateway): every call is authorized by registry action
 * for its key first, then keys are checked, then the gateway's namespace and immutability rules apply.
 */
export class ObjectAccess extends Effect.Service<ObjectAccess>()("fleet/ObjectAccess", {
  effect: Effect.gen(function* () {
    const authority = yield* ActionAuthority
    const gateway = yield* ObjectGateway

    const allow = (token: string | undefined, key: string, mode: "read" | "write") =>
      authority.authorize(token, objectAction(key, mode))

    /** Credentials first (an unauthenticated caller learns nothing), then the key itself. */
    const allowKey = (token: string | undefined, key: string, mode: "read" | "write") =>
      Effect.zipRight(allow(token, key, mode), checkKey(key))

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

    const head = Effect.fn("ObjectAccess.head")(function* (token: string | undefined, key: string) {
      yield* allowKey(token, key, "read")
      const found = yield* gateway.head(key)
      return Option.isSome(found) ? found.value : yield* notFound(key)
    })

    const read = Effect.fn("ObjectAccess.read")(function* (token: string | undefined, key: string) {
      yield* allowKey(token, key, "read")
      const found = yield* gateway.read(key)
      return Option.isSome(found) ? found.value : yield* notFound(key)
    })

    const write = Effect.fn("ObjectAccess.write")(function* <E>(
      token: string | undefined,
      key: string,
      body: Stream.Stream<Uint8Array, E>,
      condition: WriteCondition
    ) {
      yield* allowKey(token, key, "write")
      yield* ownedElsewhere(key, "write")
      const outcome = yield* gateway.write(key, body, condition)
      if (!outcome.written && condition.kind !== "always") {
        const current = Option.getOrNull(Option.map(outcome.head, (h) => h.sha256))
        return yield* new PreconditionFailed({
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
      return { created: outcome.written && condition.kind === "absent", head: Option.getOrThrow(outcome.head) }
    })

    const remove = Effect.fn("ObjectAccess.delete")(function* (token: string | undefined, key: string) {
      yield* allowKey(token, key, "write")
      yield* ownedElsewhere(key, "delete")
      if (!(yield* gateway.delete(key))) return yield* notFound(key)
    })

    /** A page of heads under `prefix`, after the cursor, at most `limit`. */
    const list = Effect.fn("ObjectAccess.list")(function* (
      token: string | undefined,
      prefix: string,
      cursor: string | undefined,
      limit: number
    ) {
      yield* allow(token, prefix, "read")
      // One more than the page says whether another follows.
      const heads = yield* gateway.list(prefix, {
        after: cursor === undefined ? undefined : keyOfCursor(cursor),
        limit: limit + 1
      })
      const objects = heads.slice(0, limit)
      const last = objects.at(-1)
      return {
        objects,
        next: heads.length > limit && last !== undefined ? cursorOf(last.key) : null
      } satisfies ObjectPage
    })

    return { head, read, write, delete: remove, list } as const
  })
}) {}
