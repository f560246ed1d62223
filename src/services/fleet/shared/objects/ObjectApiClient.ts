import { createHash } from "node:crypto"
import * as fs from "node:fs"
import { Readable } from "node:stream"
import { pipeline } from "node:stream/promises"
import {
  FetchHttpClient,
  HttpBody,
  type HttpClient,
  type HttpClientError,
  HttpClientRequest,
  type HttpClientResponse
} from "@effect/platform"
import { Config, type Duration, Effect, Option, Schedule, Schema, Stream } from "effect"
import { ObjectHeadAnswer, type ObjectListAnswer } from "../../../../contracts/fleet/Objects.js"
import { isLoopbackHost, unreachable } from "../../../platform/Net.js"
import type { ObjectHead, WriteCondition } from "../../../platform/objects/ObjectStore.js"
import { FleetConfig } from "../FleetConfig.js"
import {
  controlPlaneAt,
  execute,
  fetchWithin,
  refusalOf,
  requestTo,
  routeOf,
  thrownBy,
  vaultAt
} from "./ControlPlaneHttp.js"
import { readGrantFile } from "./GrantFile.js"

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

const toHead = (answer: typeof ObjectHeadAnswer.Type): ObjectHead => ({
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

/** The control plane's problem as a typed error: its code, status, detail and, on a 412, the current digest. */
const problem = (response: HttpClientResponse.HttpClientResponse) =>
  Effect.flatMap(refusalOf(response), ({ body, status }) =>
    Effect.fail(
      failure(
        typeof body.code === "string" ? body.code : `HTTP_${status}`,
        status,
        typeof body.detail === "string" ? body.detail : `the control plane answered ${status}`,
        body.current_sha256 === undefined ? undefined : (body.current_sha256 as string | null)
      )
    )
  )

/**
 * What the typed client fails with besides the transport and a refusal (those pass through): an answer that does not
 * decode is "not JSON", as a hand-parsed answer was. (Refusals never decode into the contract's classes here: see
 * ControlPlaneHttp.rawRefusals.)
 */
const answerNotRead = <E extends { readonly _tag: string }>(
  error: E
): Effect.Effect<never, HttpClientError.HttpClientError | ObjectApiError> =>
  error._tag === "RequestError" || error._tag === "ResponseError"
    ? Effect.fail(error as unknown as HttpClientError.HttpClientError)
    : Effect.fail(failure("CONTROL_PLANE_UNREACHABLE", 200, "the answer was not JSON"))

/**
 * The object API for other hosts (KEEL_CONTROL_PLANE_URL and a vault token, as `publish-beacon` uses them):
 * typed answers, the control plane's problem codes as typed errors. The listing goes through the control plane's
 * typed client; the object routes (`/api/objects/*`) through HttpClient on the contract's own routes, because
 * HttpApiClient cannot fill a `*` path and their bodies stream from and to files.
 */
export const makeObjectApiClient = (options: {
  readonly controlPlaneUrl: string
  readonly token: string
  readonly timeoutMs?: number
}) =>
  Effect.gen(function* () {
    const base = yield* secureBase("KEEL_CONTROL_PLANE_URL", options.controlPlaneUrl)
    const timeout = options.timeoutMs ?? 60_000
    const typed = yield* controlPlaneAt(base.origin, options.token).pipe(Effect.provide(FetchHttpClient.layer))

    /** One call: a transport failure is CONTROL_PLANE_UNREACHABLE; a 404 is `onMissing` when given, else a problem. */
    const call = <A>(
      send: Effect.Effect<A, HttpClientError.HttpClientError | ObjectApiError, HttpClient.HttpClient>,
      onMissing?: () => A
    ): Effect.Effect<A, ObjectApiError> =>
      send.pipe(
        Effect.catchAll((error): Effect.Effect<A, ObjectApiError> => {
          if (error._tag === "RequestError")
            return Effect.fail(failure("CONTROL_PLANE_UNREACHABLE", 0, unreachable(base, thrownBy(error))))
          if (error._tag === "ResponseError")
            return error.response.status === 404 && onMissing !== undefined
              ? Effect.succeed(onMissing())
              : problem(error.response)
          return Effect.fail(error)
        }),
        Effect.provide(fetchWithin(timeout))
      )

    const at = (endpoint: "get" | "head" | "put" | "delete", key: string) =>
      requestTo(base, routeOf("objects", endpoint), { token: options.token, key })

    const head: ObjectApiClient["head"] = (key) =>
      call(
        Effect.map(execute(at("head", key)), (response) =>
          Option.some({
            key,
            size: Number(response.headers["content-length"]),
            sha256: response.headers["x-object-sha256"] ?? "",
            modifiedAt: Date.parse(response.headers["last-modified"] ?? "")
          })
        ),
        Option.none
      )

    const get: ObjectApiClient["get"] = (key) =>
      call(
        Effect.flatMap(execute(at("get", key)), (response) =>
          Effect.map(response.arrayBuffer, (bytes) => Option.some(new Uint8Array(bytes)))
        ),
        Option.none
      )

    const getFile: ObjectApiClient["getFile"] = (key, file) =>
      call(
        Effect.flatMap(execute(at("get", key)), (response) =>
          Effect.flatMap(Stream.toReadableStreamEffect(response.stream), (body) =>
            Effect.tryPromise({
              try: async () => {
                const hash = createHash("sha256")
                let size = 0
                const source = Readable.fromWeb(body as import("node:stream/web").ReadableStream<Uint8Array>)
                source.on("data", (chunk: Buffer) => {
                  hash.update(chunk)
                  size += chunk.byteLength
                })
                await pipeline(source, fs.createWriteStream(file, { flags: "wx", mode: 0o600 }))
                return Option.some({ sha256: hash.digest("hex"), size })
              },
              // A body that broke off is the transport's failure (the cause the stream carries), not the stream's.
              catch: (error) => {
                const cause = (error as { _tag?: string; cause?: unknown }).cause
                const thrown =
                  (error as { _tag?: string })._tag === "ResponseError" && cause instanceof Error ? cause : error
                return failure("CONTROL_PLANE_UNREACHABLE", 0, `reading ${key}: ${(thrown as Error).message}`)
              }
            })
          )
        ),
        Option.none
      )

    const send = (key: string, body: HttpBody.HttpBody, condition: WriteCondition | undefined) =>
      call(
        Effect.flatMap(
          execute(
            at("put", key).pipe(
              HttpClientRequest.setBody(body),
              HttpClientRequest.setHeaders(conditionHeaders(condition))
            )
          ),
          (response) =>
            Effect.map(
              Effect.flatMap(response.json, Schema.decodeUnknown(ObjectHeadAnswer)).pipe(
                Effect.mapError(() => failure("CONTROL_PLANE_UNREACHABLE", response.status, "the answer was not JSON"))
              ),
              toHead
            )
        )
      )

    // fetch frames the body itself: a length for bytes, chunked for a stream.
    const put: ObjectApiClient["put"] = (key, bytes, condition) =>
      send(key, HttpBody.uint8Array(bytes, "application/octet-stream"), condition)

    const putFile: ObjectApiClient["putFile"] = (key, file, condition) =>
      Effect.gen(function* () {
        yield* Effect.try({
          try: () => fs.accessSync(file, fs.constants.R_OK),
          catch: (error) => failure("FILE_UNREADABLE", 0, (error as Error).message)
        })
        const stream = Stream.fromReadableStream(
          () => Readable.toWeb(fs.createReadStream(file)) as unknown as ReadableStream<Uint8Array>,
          (error) => error
        )
        return yield* send(key, HttpBody.stream(stream, "application/octet-stream"), condition)
      })

    const remove: ObjectApiClient["delete"] = (key) => call(Effect.as(execute(at("delete", key)), true), () => false)

    const list: ObjectApiClient["list"] = (prefix) =>
      Effect.gen(function* () {
        const heads: Array<ObjectHead> = []
        let cursor: string | null = null
        do {
          const page: typeof ObjectListAnswer.Type = yield* call(
            typed.objects
              .list({ urlParams: { prefix, ...(cursor === null ? {} : { cursor }) } })
              .pipe(Effect.catchAll(answerNotRead))
          )
          heads.push(...page.objects.map(toHead))
          cursor = page.next_cursor
        } while (cursor !== null)
        return heads
      })

    return { head, get, getFile, put, putFile, delete: remove, list } satisfies ObjectApiClient
  })

/** A vault call: a transport failure is CONTROL_PLANE_UNREACHABLE, a refusal `onRefused(status)`. */
const vaultCall = <A, E>(
  base: URL,
  send: Effect.Effect<A, E, HttpClient.HttpClient>,
  onRefused: (status: number) => ObjectApiError
): Effect.Effect<A, ObjectApiError> =>
  send.pipe(
    Effect.catchAll((error) => {
      const tag = (error as { _tag?: string })._tag
      if (tag === "RequestError")
        return Effect.fail(
          failure("CONTROL_PLANE_UNREACHABLE", 0, unreachable(base, thrownBy(error as HttpClientError.RequestError)))
        )
      if (tag === "ResponseError")
        return Effect.fail(onRefused((error as HttpClientError.ResponseError).response.status))
      // A declared refusal class never arrives (refusals stay raw); an answer that does not decode is the vault's.
      return Effect.fail(onRefused(200))
    }),
    Effect.provide(fetchWithin(15_000))
  )

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
    const credential = yield* readGrantFile(grantFile).pipe(
      Effect.mapError((error) => failure("VAULT_REFUSED", 0, error.detail))
    )
    const answer = yield* vaultCall(
      base,
      Effect.flatMap(vaultAt(base.origin), (vault) =>
        vault.tokens.exchange({
          payload: { grant_id: credential.grant_id, consumer: credential.consumer, secret: credential.secret }
        })
      ),
      (status) => failure("VAULT_REFUSED", status, `the vault answered ${status}`)
    )
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
    const answer = yield* vaultCall(
      base,
      Effect.flatMap(vaultAt(base.origin, token), (vault) =>
        // Each segment encoded, as the path always carried it (HttpApiClient puts a path parameter in as given).
        vault.tokens.read({ path: { item: encodeURIComponent(item), field: encodeURIComponent(field) }, headers: {} })
      ),
      (status) => failure("VAULT_REFUSED", status, `the vault refused ${reference} (${status})`)
    )
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
