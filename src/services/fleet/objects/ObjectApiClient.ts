import { createHash } from "node:crypto"
import * as fs from "node:fs"
import { Readable } from "node:stream"
import { pipeline } from "node:stream/promises"
import { Config, type Duration, Effect, Option, Schedule, Schema } from "effect"
import { isLoopbackHost, unreachable } from "../../platform/Net.js"
import type { ObjectHead, WriteCondition } from "../../platform/objects/ObjectStore.js"
import { readGrantCredential } from "../beacon/BeaconPublisher.js"
import { FleetConfig } from "../FleetConfig.js"

/**
 * A refusal or failure of the object API as another host meets it: the problem's `code` and `status` from
 * the control plane, or `CONTROL_PLANE_UNREACHABLE` (status 0) / `INSECURE_URL` / `VAULT_REFUSED` before it.
 */
export class ObjectApiError extends Schema.TaggedError<ObjectApiError>()("ObjectApiError", {
  code: Schema.String,
  status: Schema.Int,
  detail: Schema.String,
  /** On PRECONDITION_FAILED: the object's digest now (null when it is absent). */
  current_sha256: Schema.optional(Schema.NullOr(Schema.String))
}) {}

export interface ObjectApiClient {
  readonly head: (key: string) => Effect.Effect<Option.Option<ObjectHead>, ObjectApiError>
  readonly get: (key: string) => Effect.Effect<Option.Option<Uint8Array>, ObjectApiError>
  /** Streams the object into `file` (created owner-only, never read into memory); none when it is absent. */
  readonly getFile: (
    key: string,
    file: string
  ) => Effect.Effect<Option.Option<{ readonly sha256: string; readonly size: number }>, ObjectApiError>
  readonly put: (
    key: string,
    bytes: Uint8Array,
    condition?: WriteCondition
  ) => Effect.Effect<ObjectHead, ObjectApiError>
  /** Streams a file (never read into memory) as the object's body. */
  readonly putFile: (key: string, file: string, condition?: WriteCondition) => Effect.Effect<ObjectHead, ObjectApiError>
  readonly delete: (key: string) => Effect.Effect<boolean, ObjectApiError>
  /** Every head under `prefix`, following the pages. */
  readonly list: (prefix: string) => Effect.Effect<ReadonlyArray<ObjectHead>, ObjectApiError>
}

const failure = (code: string, status: number, detail: string, current?: string | null) =>
  new ObjectApiError({ code, status, detail, ...(current === undefined ? {} : { current_sha256: current }) })

/** https, or http to a loopback address only: a token never crosses a network in clear text. */
export const secureBase = (name: string, text: string): Effect.Effect<URL, ObjectApiError> => {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return Effect.fail(failure("INSECURE_URL", 0, `${name} is not a URL`))
  }
  if (url.protocol === "https:" || (url.protocol === "http:" && isLoopbackHost(url.hostname)))
    return Effect.succeed(url)
  return Effect.fail(failure("INSECURE_URL", 0, `${name} must use https: (http: only to a loopback address)`))
}

const keyPath = (key: string) => `/api/objects/${key.split("/").map(encodeURIComponent).join("/")}`

interface HeadAnswer {
  readonly key: string
  readonly size: number
  readonly sha256: string
  readonly modified_at: string
}

const toHead = (answer: HeadAnswer): ObjectHead => ({
  key: answer.key,
  size: answer.size,
  sha256: answer.sha256,
  modifiedAt: Date.parse(answer.modified_at)
})

const conditionHeaders = (condition: WriteCondition | undefined): Record<string, string> =>
  condition === undefined || condition.kind === "always"
    ? {}
    : condition.kind === "absent"
      ? { "if-none-match": "*" }
      : { "if-match": `"${condition.sha256}"` }

/**
 * The object API for other hosts (KEEL_CONTROL_PLANE_URL and a vault token, as `publish-beacon` uses them):
 * typed answers, the control plane's problem codes as typed errors.
 */
export const makeObjectApiClient = (options: {
  readonly controlPlaneUrl: string
  readonly token: string
  readonly timeoutMs?: number
}) =>
  Effect.gen(function* () {
    const base = yield* secureBase("KEEL_CONTROL_PLANE_URL", options.controlPlaneUrl)
    const timeout = options.timeoutMs ?? 60_000

    const call = (path: string, init: RequestInit & { duplex?: "half" }) =>
      Effect.tryPromise({
        try: async (signal) => {
          const response = await fetch(new URL(path, base), {
            ...init,
            headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${options.token}` },
            signal: AbortSignal.any([signal, AbortSignal.timeout(timeout)])
          })
          return response
        },
        catch: (error) => failure("CONTROL_PLANE_UNREACHABLE", 0, unreachable(base, error))
      })

    const problem = (response: Response) =>
      Effect.flatMap(
        Effect.promise(() => response.text()),
        (text) => {
          let body: { code?: unknown; detail?: unknown; current_sha256?: unknown } = {}
          try {
            body = JSON.parse(text)
          } catch {}
          return Effect.fail(
            failure(
              typeof body.code === "string" ? body.code : `HTTP_${response.status}`,
              response.status,
              typeof body.detail === "string" ? body.detail : `the control plane answered ${response.status}`,
              body.current_sha256 === undefined ? undefined : (body.current_sha256 as string | null)
            )
          )
        }
      )

    const json = <A>(response: Response) =>
      Effect.tryPromise({
        try: () => response.json() as Promise<A>,
        catch: () => failure("CONTROL_PLANE_UNREACHABLE", response.status, "the answer was not JSON")
      })

    const head: ObjectApiClient["head"] = (key) =>
      Effect.gen(function* () {
        const response = yield* call(keyPath(key), { method: "HEAD" })
        if (response.status === 404) return Option.none()
        if (!response.ok) return yield* problem(response)
        return Option.some({
          key,
          size: Number(response.headers.get("content-length")),
          sha256: response.headers.get("x-object-sha256") ?? "",
          modifiedAt: Date.parse(response.headers.get("last-modified") ?? "")
        })
      })

    const get: ObjectApiClient["get"] = (key) =>
      Effect.gen(function* () {
        const response = yield* call(keyPath(key), { method: "GET" })
        if (response.status === 404) return Option.none()
        if (!response.ok) return yield* problem(response)
        return Option.some(new Uint8Array(yield* Effect.promise(() => response.arrayBuffer())))
      })

    const getFile: ObjectApiClient["getFile"] = (key, file) =>
      Effect.gen(function* () {
        const response = yield* call(keyPath(key), { method: "GET" })
        if (response.status === 404) return Option.none()
        if (!response.ok || response.body === null) return yield* problem(response)
        const body = response.body
        return Option.some(
          yield* Effect.tryPromise({
            try: async () => {
              const hash = createHash("sha256")
              let size = 0
              const source = Readable.fromWeb(body as import("node:stream/web").ReadableStream<Uint8Array>)
              source.on("data", (chunk: Buffer) => {
                hash.update(chunk)
                size += chunk.byteLength
              })
              await pipeline(source, fs.createWriteStream(file, { flags: "wx", mode: 0o600 }))
              return { sha256: hash.digest("hex"), size }
            },
            catch: (error) => failure("CONTROL_PLANE_UNREACHABLE", 0, `reading ${key}: ${(error as Error).message}`)
          })
        )
      })

    const send = (key: string, body: Uint8Array | ReadableStream<Uint8Array>, condition: WriteCondition | undefined) =>
      Effect.gen(function* () {
        const response = yield* call(keyPath(key), {
          method: "PUT",
          body,
          duplex: "half",
          // fetch frames the body itself: a length for bytes, chunked for a stream.
          headers: { "content-type": "application/octet-stream", ...conditionHeaders(condition) }
        })
        if (!response.ok) return yield* problem(response)
        return toHead(yield* json<HeadAnswer>(response))
      })

    const put: ObjectApiClient["put"] = (key, bytes, condition) => send(key, bytes, condition)

    const putFile: ObjectApiClient["putFile"] = (key, file, condition) =>
      Effect.gen(function* () {
        yield* Effect.try({
          try: () => fs.accessSync(file, fs.constants.R_OK),
          catch: (error) => failure("FILE_UNREADABLE", 0, (error as Error).message)
        })
        const stream = Readable.toWeb(fs.createReadStream(file)) as unknown as ReadableStream<Uint8Array>
        return yield* send(key, stream, condition)
      })

    const remove: ObjectApiClient["delete"] = (key) =>
      Effect.gen(function* () {
        const response = yield* call(keyPath(key), { method: "DELETE" })
        if (response.status === 404) return false
        if (!response.ok) return yield* problem(response)
        return true
      })

    const list: ObjectApiClient["list"] = (prefix) =>
      Effect.gen(function* () {
        const heads: Array<ObjectHead> = []
        let cursor: string | null = null
        do {
          const query = new URLSearchParams({ prefix, ...(cursor === null ? {} : { cursor }) })
          const response = yield* call(`/api/objects?${query}`, { method: "GET" })
          if (!response.ok) return yield* problem(response)
          const page = yield* json<{ objects: Array<HeadAnswer>; next_cursor: string | null }>(response)
          heads.push(...page.objects.map(toHead))
          cursor = page.next_cursor
        } while (cursor !== null)
        return heads
      })

    return { head, get, getFile, put, putFile, delete: remove, list } satisfies ObjectApiClient
  })

/**
 * A short-lived token for a grant credential file (owner-only, as `vault grant create --out` writes it),
 * exchanged at the vault (KEEL_VAULT_URL).
 */
export const vaultTokenFromGrantFile = (vaultUrl: string, grantFile: string) =>
  Effect.gen(function* () {
    const base = yield* secureBase("KEEL_VAULT_URL", vaultUrl)
    const mode = yield* Effect.try({
      try: () => fs.statSync(grantFile).mode,
      catch: (error) => failure("VAULT_REFUSED", 0, `cannot read the grant file: ${(error as Error).message}`)
    })
    if ((mode & 0o077) !== 0)
      return yield* failure(
        "VAULT_REFUSED",
        0,
        `${grantFile} must be owner-only (0600), not ${(mode & 0o777).toString(8)}`
      )
    const credential = yield* readGrantCredential(grantFile).pipe(
      Effect.mapError((error) => failure("VAULT_REFUSED", 0, error.detail))
    )
    const response = yield* Effect.tryPromise({
      try: () =>
        fetch(new URL("/v1/vault/token", base), {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            grant_id: credential.grant_id,
            consumer: credential.consumer,
            secret: credential.secret
          }),
          signal: AbortSignal.timeout(15_000)
        }),
      catch: (error) => failure("CONTROL_PLANE_UNREACHABLE", 0, unreachable(base, error))
    })
    if (!response.ok) return yield* failure("VAULT_REFUSED", response.status, `the vault answered ${response.status}`)
    const answer = (yield* Effect.promise(() => response.json())) as { token: string }
    return answer.token
  })

/**
 * This host's way to the control plane as its configuration names it: KEEL_CONTROL_PLANE_URL, and a token exchanged
 * at KEEL_VAULT_URL (default the control plane) for the grant in the first of `grantFiles` that is set (e.g.
 * `KEEL_RELEASE_GRANT_FILE`, then `KEEL_GRANT_FILE`). The grant's secret stays in its file.
 */
export const configuredAccess = (
  grantFiles: ReadonlyArray<string>,
  options: {
    /** The control plane when KEEL_CONTROL_PLANE_URL is unset (the CLI's own server); else it is required. */
    readonly defaultUrl?: string
    /** What the grant must hold, for the message when no grant file is set. */
    readonly needs?: string
  } = {}
) =>
  Effect.gen(function* () {
    const fleet = yield* FleetConfig
    const setting = (name: string) => Config.option(Config.string(name)).pipe(Effect.orDie)
    const url = Option.orElse(fleet.controlPlaneUrl, () => Option.fromNullable(options.defaultUrl))
    if (Option.isNone(url))
      return yield* failure(
        "ROUTING_MISSING",
        0,
        "KEEL_CONTROL_PLANE_URL is not set: the object API is the control plane's"
      )
    let grantFile = Option.none<string>()
    for (const name of grantFiles) if (Option.isNone(grantFile)) grantFile = yield* setting(name)
    if (Option.isNone(grantFile))
      return yield* failure(
        "ROUTING_MISSING",
        0,
        `${grantFiles.join(" or ")} is not set: a grant credential file${options.needs === undefined ? "" : ` holding ${options.needs}`}`
      )
    // https, or http to loopback only: the token must never cross a network in clear text.
    yield* secureBase("KEEL_CONTROL_PLANE_URL", url.value)
    const vaultUrl = Option.getOrElse(fleet.vaultUrl, () => url.value)
    const token = yield* vaultTokenFromGrantFile(vaultUrl, grantFile.value)
    return { controlPlaneUrl: url.value, vaultUrl, token }
  })

/** The object API as this host's configuration names it (`configuredAccess`). */
export const configuredObjectApiClient = (grantFiles: ReadonlyArray<string>) =>
  Effect.flatMap(configuredAccess(grantFiles), (access) =>
    makeObjectApiClient({ controlPlaneUrl: access.controlPlaneUrl, token: access.token })
  )

/** One `item#field` read from the vault with a token whose grant names it (the value never logged). */
export const readVaultField = (vaultUrl: string, token: string, reference: string) =>
  Effect.gen(function* () {
    const base = yield* secureBase("KEEL_VAULT_URL", vaultUrl)
    const [item = "", field = ""] = reference.split("#")
    const response = yield* Effect.tryPromise({
      try: () =>
        fetch(new URL(`/v1/vault/items/${encodeURIComponent(item)}/${encodeURIComponent(field)}`, base), {
          headers: { authorization: `Bearer ${token}` },
          signal: AbortSignal.timeout(15_000)
        }),
      catch: (error) => failure("CONTROL_PLANE_UNREACHABLE", 0, unreachable(base, error))
    })
    if (!response.ok)
      return yield* failure("VAULT_REFUSED", response.status, `the vault refused ${reference} (${response.status})`)
    const answer = (yield* Effect.promise(() => response.json())) as { value: string }
    return answer.value
  })

/** A failure worth waiting out: the control plane unreachable (restarting) or answering 5xx. */
export const isTransient = (error: ObjectApiError) => error.code === "CONTROL_PLANE_UNREACHABLE" || error.status >= 500

/**
 * Retries transient failures (the control plane restarting, 5xx) with a jittered exponential backoff for at most
 * `within`; refusals (4xx) fail at once.
 */
export const retryTransient = <A, R>(effect: Effect.Effect<A, ObjectApiError, R>, within: Duration.DurationInput) =>
  Effect.retry(effect, {
    while: isTransient,
    schedule: Schedule.exponential("250 millis", 2).pipe(
      Schedule.either(Schedule.spaced("5 seconds")),
      Schedule.jittered,
      Schedule.upTo(within)
    )
  })

/** The same client, each call retrying transient failures for at most `within` (a builder outliving a restart). */
export const resilientClient = (client: ObjectApiClient, within: Duration.DurationInput): ObjectApiClient => ({
  head: (key) => retryTransient(client.head(key), within),
  get: (key) => retryTransient(client.get(key), within),
  getFile: (key, file) =>
    retryTransient(
      Effect.suspend(() => {
        // A partial download from a failed attempt is discarded before the next one.
        fs.rmSync(file, { force: true })
        return client.getFile(key, file)
      }),
      within
    ),
  put: (key, bytes, condition) => retryTransient(client.put(key, bytes, condition), within),
  putFile: (key, file, condition) => retryTransient(client.putFile(key, file, condition), within),
  delete: (key) => retryTransient(client.delete(key), within),
  list: (prefix) => retryTransient(client.list(prefix), within)
})
