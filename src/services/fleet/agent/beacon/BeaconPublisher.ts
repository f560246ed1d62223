import * as fs from "node:fs/promises"
import { type HttpClient, type HttpClientError, HttpClientRequest } from "@effect/platform"
import { Config, Data, Effect, Option } from "effect"
import { isLoopbackHost, unreachable } from "../../../platform/Net.js"
import { decodeBeacon } from "../../shared/beacon/Beacon.js"
import { FleetConfig } from "../../shared/FleetConfig.js"
import {
  execute,
  fetchWithin,
  answerOf as read,
  requestTo,
  routeOf,
  thrownBy,
  vaultAt
} from "../../shared/objects/ControlPlaneHttp.js"
import { readGrantFile } from "../../shared/objects/GrantFile.js"

/** Why a publication failed, in one line; the stored beacon is untouched. */
export class BeaconPublishFailed extends Data.TaggedError("BeaconPublishFailed")<{
  readonly reason:
    | "routing_missing"
    | "insecure_url"
    | "beacon_invalid"
    | "grant_unreadable"
    | "grant_not_owner_only"
    | "grant_over_broad"
    | "grant_wrong_host"
    | "vault_refused"
    | "control_plane_refused"
    | "backend_error"
  readonly detail: string
}> {}

export interface BeaconRouting {
  readonly controlPlaneUrl: string
  readonly vaultUrl: string
  readonly consumer: string
  readonly grantFile: string
}

const ROUTING = {
  controlPlaneUrl: "KEEL_CONTROL_PLANE_URL",
  vaultUrl: "KEEL_VAULT_URL",
  consumer: "KEEL_BEACON_CONSUMER",
  grantFile: "KEEL_BEACON_GRANT_FILE"
} as const

const fail = (reason: BeaconPublishFailed["reason"], detail: string) => new BeaconPublishFailed({ reason, detail })

/** `KEY=value` lines (comments and blanks ignored), as systemd's EnvironmentFile= reads them. */
export const parseEnvFile = (text: string): Record<string, string> => {
  const values: Record<string, string> = {}
  for (const raw of text.split("\n")) {
    const line = raw.trim()
    if (line === "" || line.startsWith("#")) continue
    const eq = line.indexOf("=")
    if (eq <= 0) continue
    values[line.slice(0, eq).trim()] = line
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, "$1")
  }
  return values
}

/** Routing from the environment, falling back to an env file; every missing name is reported. */
export const beaconRouting = (envFile: Option.Option<string>) =>
  Effect.gen(function* () {
    const fromFile = Option.isSome(envFile)
      ? yield* Effect.tryPromise({
          try: () => fs.readFile(envFile.value, "utf8").then(parseEnvFile),
          catch: (error) => fail("routing_missing", `cannot read ${envFile.value}: ${(error as Error).message}`)
        })
      : {}
    const fleet = yield* FleetConfig
    // The environment first: the fleet's URLs as FleetConfig read them, the beacon's own names here.
    const fromEnv = (name: string) =>
      name === ROUTING.controlPlaneUrl
        ? Effect.succeed(fleet.controlPlaneUrl)
        : name === ROUTING.vaultUrl
          ? Effect.succeed(fleet.vaultUrl)
          : Config.option(Config.string(name)).pipe(Effect.orDie)
    const resolved: Record<string, string> = {}
    const missing: Array<string> = []
    for (const [field, name] of Object.entries(ROUTING)) {
      const value = Option.getOrUndefined(yield* fromEnv(name)) ?? fromFile[name]
      if (value === undefined || value === "") missing.push(name)
      else resolved[field] = value
    }
    if (missing.length > 0) return yield* fail("routing_missing", `missing ${missing.join(", ")}`)
    return resolved as unknown as BeaconRouting
  })

const checkUrl = (name: string, text: string) => {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return Effect.fail(fail("routing_missing", `${name} is not a URL`))
  }
  if (url.protocol === "https:") return Effect.succeed(url)
  if (url.protocol === "http:" && isLoopbackHost(url.hostname)) return Effect.succeed(url)
  return Effect.fail(fail("insecure_url", `${name} must use https: (http: only to a loopback address)`))
}

/**
 * An answer as the publication reads it: its status and its body (JSON, else its text). Refusals are answers too
 * (ControlPlaneHttp.rawRefusals); a transport failure is backend_error; each call within 15 s.
 */
const answerOf = <E>(url: URL, send: Effect.Effect<{ status: number; body: unknown }, E, HttpClient.HttpClient>) =>
  send.pipe(
    Effect.catchAll((error) => {
      const tag = (error as { _tag?: string })._tag
      if (tag === "RequestError")
        return Effect.fail(fail("backend_error", unreachable(url, thrownBy(error as HttpClientError.RequestError))))
      if (tag === "ResponseError") return read((error as HttpClientError.ResponseError).response)
      return Effect.fail(fail("backend_error", `${url.origin} answered what does not decode`))
    }),
    Effect.provide(fetchWithin(15_000))
  )

const problemDetail = (body: unknown) =>
  typeof body === "object" && body !== null && "detail" in body ? String((body as { detail: unknown }).detail) : ""

const sameSet = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) =>
  a.length === b.length && [...a].sort().every((x, i) => x === [...b].sort()[i])

/** A beacon grant may do exactly one thing: write this one host's health. */
const overBroad = (
  scope: { actions: ReadonlyArray<string>; hosts: ReadonlyArray<string>; items: ReadonlyArray<string> },
  host: string
) => !sameSet(scope.actions, ["host-health-write"]) || !sameSet(scope.hosts, [host]) || scope.items.length > 0

/** Why a grant's scope cannot publish `host`'s beacon: another host's grant, or one that allows more. */
const scopeRefusal = (
  scope: { actions: ReadonlyArray<string>; hosts: ReadonlyArray<string>; items: ReadonlyArray<string> },
  host: string
): readonly ["grant_wrong_host" | "grant_over_broad", string] | undefined =>
  !scope.hosts.includes(host)
    ? ["grant_wrong_host", `the grant covers ${scope.hosts.join(", ") || "no host"}, not ${host}`]
    : overBroad(scope, host)
      ? ["grant_over_broad", `the grant allows more than host-health-write for ${host}`]
      : undefined

/** The grant credential in `file` (shared/objects/GrantFile.ts), failing as a publication does: grant_unreadable. */
export const readGrantCredential = (file: string) =>
  readGrantFile(file).pipe(Effect.mapError((error) => fail("grant_unreadable", error.detail)))

/**
 * `ctl host publish-beacon`: validates the beacon, checks the grant file (owner-only, exactly
 * host-health-write for this host), exchanges it at the vault for a short-lived token and PUTs the
 * beacon to the control plane. It uses no other credential source.
 */
export const publishBeacon = (file: string, routing: BeaconRouting) =>
  Effect.gen(function* () {
    const controlPlane = yield* checkUrl("KEEL_CONTROL_PLANE_URL", routing.controlPlaneUrl)
    const vault = yield* checkUrl("KEEL_VAULT_URL", routing.vaultUrl)
    const text = yield* Effect.tryPromise({
      try: () => fs.readFile(file, "utf8"),
      catch: (error) => fail("beacon_invalid", `cannot read ${file}: ${(error as Error).message}`)
    })
    const document = yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: (error) => fail("beacon_invalid", `${file} is not JSON: ${(error as Error).message.split("\n")[0]}`)
    })
    // The same rules and the same field-by-field refusal as the control plane's (unknown fields refused too).
    const beacon = yield* decodeBeacon(document).pipe(
      Effect.mapError((detail) => fail("beacon_invalid", `${file} is not a valid beacon: ${detail}`))
    )
    const stat = yield* Effect.tryPromise({
      try: () => fs.stat(routing.grantFile),
      catch: (error) => fail("grant_unreadable", `cannot read the grant file: ${(error as Error).message}`)
    })
    if ((stat.mode & 0o077) !== 0) {
      return yield* fail(
        "grant_not_owner_only",
        `${routing.grantFile} is mode ${(stat.mode & 0o777).toString(8)}; it must be owner-only (0600)`
      )
    }
    const credential = yield* readGrantCredential(routing.grantFile)
    if (credential.consumer !== routing.consumer)
      return yield* fail("grant_unreadable", `the grant belongs to ${credential.consumer}, not ${routing.consumer}`)
    const fileRefusal = credential.scope === undefined ? undefined : scopeRefusal(credential.scope, beacon.host)
    if (fileRefusal !== undefined) return yield* fail(...fileRefusal)

    // The vault's typed client: the grant's three fields, as they were always sent (never its scope).
    const exchanged = yield* answerOf(
      vault,
      Effect.flatMap(vaultAt(vault.origin), (client) =>
        client.tokens.exchange({
          payload: { grant_id: credential.grant_id, consumer: credential.consumer, secret: credential.secret }
        })
      ).pipe(Effect.map((token) => ({ status: 200, body: token as unknown })))
    )
    if (exchanged.status === 401 || exchanged.status === 403)
      return yield* fail(
        "vault_refused",
        `the vault refused the grant (${exchanged.status}): ${problemDetail(exchanged.body)}`
      )
    if (exchanged.status !== 200) return yield* fail("backend_error", `the vault answered ${exchanged.status}`)
    const token = exchanged.body as {
      token: string
      actions: Array<string>
      hosts: Array<string>
      items: Array<string>
    }
    const tokenRefusal = scopeRefusal(token, beacon.host)
    if (tokenRefusal !== undefined) return yield* fail(...tokenRefusal)

    // The contract's route with the file's own bytes as the body (the typed client would send its re-encoding).
    const stored = yield* answerOf(
      controlPlane,
      Effect.flatMap(
        execute(
          requestTo(controlPlane, routeOf("hostHealth", "put"), { token: token.token }).pipe(
            HttpClientRequest.bodyText(text, "application/json")
          )
        ),
        read
      )
    )
    if (stored.status === 401 || stored.status === 403)
      return yield* fail(
        "control_plane_refused",
        `the control plane refused (${stored.status}): ${problemDetail(stored.body)}`
      )
    if (stored.status !== 200)
      return yield* fail(
        stored.status >= 500 ? "backend_error" : "control_plane_refused",
        `the control plane answered ${stored.status}: ${problemDetail(stored.body)}`
      )
    return stored.body as { host: string; key: string; reported_at: string; stored_at: string }
  })
