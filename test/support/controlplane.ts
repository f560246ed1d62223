import { HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect } from "effect"
import { type HostBeacon, Vault } from "./keel.js"

/** A valid beacon of `host` with one disk (`/`) and no units. */
export const beaconDocument = (host: string, reportedAt: string): HostBeacon => ({
  schema: "keel.beacon/v1",
  host,
  os: "linux",
  reported_at: reportedAt,
  writer_version: "test",
  disks: [{ mount: "/", total_bytes: 1000, free_bytes: 400, available_bytes: 300, error: null }],
  units: []
})

/** A grant of the test's vault and a live token exchanged for it (the grant lives an hour unless told). */
export const vaultGrant = (grant: {
  readonly consumer: string
  readonly actions?: ReadonlyArray<string>
  readonly hosts?: ReadonlyArray<string>
  readonly items?: ReadonlyArray<string>
  readonly ttlMillis?: number
}) =>
  Effect.gen(function* () {
    const vault = yield* Vault
    const { credential } = yield* vault.createGrant({
      consumer: grant.consumer,
      actions: grant.actions ?? [],
      items: grant.items ?? [],
      hosts: grant.hosts ?? [],
      ttlMillis: grant.ttlMillis ?? 3_600_000
    })
    return { credential, token: (yield* vault.exchange(credential)).token }
  }).pipe(Effect.orDie)

/** A live token of `consumer` whose grant holds `actions` (for `hosts`). */
export const vaultToken = (consumer: string, actions: ReadonlyArray<string>, hosts: ReadonlyArray<string> = []) =>
  Effect.map(vaultGrant({ consumer, actions, hosts }), (g) => g.token)

/** One JSON request to the test server with an optional bearer token; the answer's status and JSON body. */
export const sendJson = (method: "GET" | "PUT" | "POST", url: string, token?: string, body?: unknown) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    let request = HttpClientRequest.make(method)(url).pipe(
      HttpClientRequest.setHeaders(token === undefined ? {} : { authorization: `Bearer ${token}` })
    )
    if (body !== undefined) request = HttpClientRequest.bodyUnsafeJson(request, body)
    const response = yield* client.execute(request)
    // biome-ignore lint/suspicious/noExplicitAny: answers are checked field by field
    return { status: response.status, body: (yield* response.json) as any }
  }).pipe(Effect.scoped, Effect.orDie)
