import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Option, TestClock } from "effect"
import { makeGithubRunnerProvider } from "../../src/services/fleet/control/runners/GithubRunnerProvider.js"
import type { ProviderScope } from "../../src/services/fleet/control/runners/RunnerProvider.js"
import { type FakeGithub, startFakeGithub } from "../support/fake-github.js"

// Issue 20, the provider port: the GitHub adapter against a local server speaking GitHub's documented shapes —
// tokens, the runner group's exact grant read back, the runner's record, and every refusal or outage as a typed
// error that never carries the credential.

const CREDENTIAL = `ghp_${"s".repeat(36)}`
const provider = makeGithubRunnerProvider()

/** A fake GitHub for one test; closed when the test ends. */
const fake = Effect.acquireRelease(
  Effect.promise(() =>
    startFakeGithub({
      credential: CREDENTIAL,
      org: "acme",
      repositories: [
        { full_name: "acme/app", id: 101, private: true },
        { full_name: "acme/lib", id: 102, private: true },
        { full_name: "acme/site", id: 103, private: false }
      ]
    })
  ),
  (github) => Effect.promise(() => github.close())
)

const scopeOf = (github: FakeGithub, overrides: Partial<ProviderScope> = {}): ProviderScope => ({
  apiUrl: github.url,
  org: "acme",
  credential: CREDENTIAL,
  ...overrides
})

/** The failure of `effect`, which must fail; its JSON must not hold the credential. */
const failure = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.map(Effect.either(effect), (result) => {
    if (Either.isRight(result)) throw new Error(`expected a failure, got ${JSON.stringify(result.right)}`)
    expect(JSON.stringify(result.left)).not.toContain(CREDENTIAL)
    return result.left
  })

describe("GithubRunnerProvider: tokens and lookups", () => {
  it.scoped("a registration token: 201 {token, expires_at}, with GitHub's headers on the request", () =>
    Effect.gen(function* () {
      const github = yield* fake
      const token = yield* provider.registrationToken(scopeOf(github))
      expect(token.token).toMatch(/^A[0-9A-F]{32}$/)
      expect(Date.parse(token.expires_at) - Date.now()).toBeGreaterThan(3_500_000)
      expect(github.issuedTokens()).toEqual([token.token])
      const [request] = github.requests
      expect(request).toMatchObject({
        method: "POST",
        path: "/orgs/acme/actions/runners/registration-token",
        authorization: `Bearer ${CREDENTIAL}`
      })
      expect(request!.headers).toMatchObject({
        accept: "application/vnd.github+json",
        "x-github-api-version": "2022-11-28",
        "user-agent": "keel"
      })
    })
  )

  it.scoped("a removal token, under an Enterprise Server's /api/v3 base (a trailing slash is fine)", () =>
    Effect.gen(function* () {
      const github = yield* fake
      const token = yield* provider.removalToken(scopeOf(github, { apiUrl: `${github.url}/api/v3/` }))
      expect(github.issuedTokens()).toEqual([token.token])
      expect(github.requests[0]!.path).toBe("/api/v3/orgs/acme/actions/runners/remove-token")
    })
  )

  it.scoped("a repository by its full name", () =>
    Effect.gen(function* () {
      const github = yield* fake
      expect(yield* provider.repository(scopeOf(github), "acme/site")).toEqual({
        id: 103,
        full_name: "acme/site",
        private: false
      })
      const missing = yield* failure(provider.repository(scopeOf(github), "acme/nope"))
      expect(missing).toMatchObject({ _tag: "RunnerProviderRefused", code: "RUNNER_PROVIDER_REFUSED", status: 404 })
    })
  )

  it.scoped("a bad credential is refused with 401, GitHub's message, and not the credential", () =>
    Effect.gen(function* () {
      const github = yield* fake
      const error = yield* failure(provider.registrationToken(scopeOf(github, { credential: `${CREDENTIAL}x` })))
      expect(error).toMatchObject({ _tag: "RunnerProviderRefused", code: "RUNNER_PROVIDER_REFUSED", status: 401 })
      expect(error.detail).toContain("Bad credentials")
      expect(JSON.stringify(error)).not.toContain(`${CREDENTIAL}x`)
    })
  )

  it.scoped("an unknown organization is refused with 404", () =>
    Effect.gen(function* () {
      const github = yield* fake
      const error = yield* failure(provider.registrationToken(scopeOf(github, { org: "other" })))
      expect(error).toMatchObject({ _tag: "RunnerProviderRefused", status: 404 })
      expect(error.detail).toBe("POST /orgs/other/actions/runners/registration-token answered 404: Not Found")
    })
  )
})

describe("GithubRunnerProvider: outages and rate limits", () => {
  const tokenPath = "/orgs/acme/actions/runners/registration-token"

  it.scoped("403 with x-ratelimit-remaining 0 is unavailable until x-ratelimit-reset", () =>
    Effect.gen(function* () {
      const github = yield* fake
      yield* TestClock.setTime(1_700_000_000_000)
      github.failNext(tokenPath, {
        status: 403,
        body: { message: "API rate limit exceeded for user ID 1." },
        headers: { "x-ratelimit-remaining": "0", "x-ratelimit-reset": "1700000042" }
      })
      const error = yield* failure(provider.registrationToken(scopeOf(github)))
      expect(error).toMatchObject({
        _tag: "RunnerProviderUnavailable",
        code: "RUNNER_PROVIDER_UNAVAILABLE",
        retry_after_seconds: 42
      })
      expect(error.detail).toContain("API rate limit exceeded")
      // A reset already past is no negative wait.
      github.failNext(tokenPath, {
        status: 403,
        headers: { "x-ratelimit-remaining": "0", "x-ratelimit-reset": "1600000000" }
      })
      expect(yield* failure(provider.registrationToken(scopeOf(github)))).toMatchObject({ retry_after_seconds: 0 })
    })
  )

  it.scoped("a 403 that is not rate limiting is a refusal", () =>
    Effect.gen(function* () {
      const github = yield* fake
      github.failNext(tokenPath, {
        status: 403,
        body: { message: "Resource not accessible by personal access token" },
        headers: { "x-ratelimit-remaining": "4999" }
      })
      const error = yield* failure(provider.registrationToken(scopeOf(github)))
      expect(error).toMatchObject({ _tag: "RunnerProviderRefused", status: 403 })
      expect(error.detail).toContain("Resource not accessible")
    })
  )

  it.scoped("429, or a secondary rate limit's 403, with retry-after is unavailable for that long", () =>
    Effect.gen(function* () {
      const github = yield* fake
      github.failNext(tokenPath, {
        status: 429,
        body: { message: "secondary rate limit" },
        headers: { "retry-after": "60" }
      })
      expect(yield* failure(provider.registrationToken(scopeOf(github)))).toMatchObject({
        _tag: "RunnerProviderUnavailable",
        retry_after_seconds: 60
      })
      github.failNext(tokenPath, {
        status: 403,
        body: { message: "You have exceeded a secondary rate limit." },
        headers: { "retry-after": "5" }
      })
      expect(yield* failure(provider.registrationToken(scopeOf(github)))).toMatchObject({
        _tag: "RunnerProviderUnavailable",
        retry_after_seconds: 5
      })
    })
  )

  it.scoped("500, an answer that is not JSON, or not GitHub's shape, is unavailable", () =>
    Effect.gen(function* () {
      const github = yield* fake
      github.failNext(tokenPath, { status: 500, body: { message: "Server Error" } })
      expect(yield* failure(provider.registrationToken(scopeOf(github)))).toMatchObject({
        _tag: "RunnerProviderUnavailable",
        detail: `POST ${tokenPath} answered 500: Server Error`,
        retry_after_seconds: null
      })
      github.failNext(tokenPath, { status: 201, body: "<html>" })
      expect(yield* failure(provider.registrationToken(scopeOf(github)))).toMatchObject({
        _tag: "RunnerProviderUnavailable",
        detail: `POST ${tokenPath}: the answer is not JSON`
      })
      // A token of the wrong type: the detail names the field, never its value.
      github.failNext(tokenPath, { status: 201, body: { token: 12345678, expires_at: "soon" } })
      const shape = yield* failure(provider.registrationToken(scopeOf(github)))
      expect(shape).toMatchObject({ _tag: "RunnerProviderUnavailable" })
      expect(shape.detail).toContain("(at token)")
      expect(shape.detail).not.toContain("12345678")
    })
  )

  it.scoped("a closed server (connection refused) and a timeout are unavailable", () =>
    Effect.gen(function* () {
      const github = yield* fake
      const closed = yield* Effect.promise(() => startFakeGithub({ credential: CREDENTIAL }))
      yield* Effect.promise(() => closed.close())
      const refused = yield* failure(provider.registrationToken(scopeOf(closed)))
      expect(refused).toMatchObject({ _tag: "RunnerProviderUnavailable", retry_after_seconds: null })
      expect(refused.detail).toContain("ECONNREFUSED")

      github.failNext(tokenPath, { status: 201, body: {}, delayMs: 2_000 })
      const slow = makeGithubRunnerProvider({ timeoutMs: 200 })
      expect(yield* failure(slow.registrationToken(scopeOf(github)))).toMatchObject({
        _tag: "RunnerProviderUnavailable",
        detail: `POST ${tokenPath}: no answer within 200 ms`
      })
    })
  )
})

describe("GithubRunnerProvider: the runner group", () => {
  const groups = "/orgs/acme/actions/runner-groups"

  it.scoped("creates the group with exactly the listed repositories, then updates it and reads it back", () =>
    Effect.gen(function* () {
      const github = yield* fake
      const scope = scopeOf(github, { apiUrl: `${github.url}/api/v3` })
      const created = yield* provider.ensureGroup(scope, {
        name: "precheck",
        repositoryIds: [101, 102],
        allowsPublicRepositories: false
      })
      expect(created).toMatchObject({
        name: "precheck",
        visibility: "selected",
        allows_public_repositories: false,
        restricted_to_workflows: false,
        created: true
      })
      expect(created.repositories.map((r) => r.id).sort()).toEqual([101, 102])
      expect(github.groups().find((g) => g.name === "precheck")).toMatchObject({
        visibility: "selected",
        restricted_to_workflows: false,
        repository_ids: [101, 102]
      })

      const updated = yield* provider.ensureGroup(scope, {
        name: "precheck",
        repositoryIds: [101, 103],
        allowsPublicRepositories: true
      })
      expect(updated).toMatchObject({ id: created.id, created: false, allows_public_repositories: true })
      expect(updated.repositories).toEqual([
        { id: 101, full_name: "acme/app", private: true },
        { id: 103, full_name: "acme/site", private: false }
      ])
      expect(github.groups().filter((g) => g.name === "precheck")).toHaveLength(1)
      const writes = github.requests.filter((r) => r.method !== "GET").map((r) => `${r.method} ${r.path}`)
      expect(writes).toEqual([
        `POST /api/v3${groups}`,
        `PATCH /api/v3${groups}/${created.id}`,
        `PUT /api/v3${groups}/${created.id}/repositories`
      ])
    })
  )

  it.scoped("a refused creation (422) is a refusal with GitHub's message", () =>
    Effect.gen(function* () {
      const github = yield* fake
      github.failNext(groups, { method: "POST", status: 422, body: { message: "Validation Failed", errors: [] } })
      const error = yield* failure(
        provider.ensureGroup(scopeOf(github), {
          name: "precheck",
          repositoryIds: [101],
          allowsPublicRepositories: false
        })
      )
      expect(error).toMatchObject({ _tag: "RunnerProviderRefused", status: 422 })
      expect(error.detail).toBe(`POST ${groups} answered 422: Validation Failed`)
    })
  )

  it.scoped("a read-back that differs from what was written is a mismatch", () =>
    Effect.gen(function* () {
      const github = yield* fake
      const scope = scopeOf(github)
      const request = { name: "precheck", repositoryIds: [101], allowsPublicRepositories: false }
      const group = yield* provider.ensureGroup(scope, request)

      github.failNext(`${groups}/${group.id}`, {
        method: "GET",
        status: 200,
        body: {
          id: group.id,
          name: "precheck",
          visibility: "selected",
          allows_public_repositories: false,
          restricted_to_workflows: true
        }
      })
      const restricted = yield* failure(provider.ensureGroup(scope, request))
      expect(restricted).toMatchObject({ _tag: "RunnerProviderMismatch", code: "RUNNER_PROVIDER_MISMATCH" })
      expect(restricted.detail).toContain("restricted_to_workflows is true")

      github.failNext(`${groups}/${group.id}/repositories`, {
        method: "GET",
        status: 200,
        body: { total_count: 1, repositories: [{ id: 102, full_name: "acme/lib", private: true }] }
      })
      const repositories = yield* failure(provider.ensureGroup(scope, request))
      expect(repositories).toMatchObject({ _tag: "RunnerProviderMismatch" })
      expect(repositories.detail).toContain("repositories are [102], not [101]")
    })
  )
})

describe("GithubRunnerProvider: the runner's record", () => {
  /** What the runner's config.sh does with a token (test/support/fake-github.ts, POST|DELETE /_fake/runners). */
  const configure = (github: FakeGithub, method: "POST" | "DELETE", body: object) =>
    Effect.promise(() =>
      fetch(`${github.url}/_fake/runners`, {
        method,
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body)
      }).then((r) => r.status)
    )

  it.scoped("a registered runner is found by exact name with its labels; deleted, then absent", () =>
    Effect.gen(function* () {
      const github = yield* fake
      const scope = scopeOf(github)
      yield* provider.ensureGroup(scope, { name: "precheck", repositoryIds: [101], allowsPublicRepositories: false })
      const { token } = yield* provider.registrationToken(scope)
      const runner = { token, labels: ["precheck"], runner_group: "precheck", os: "Linux", arch: "X64" }
      expect(yield* configure(github, "POST", { ...runner, name: "runner-host" })).toBe(201)
      expect(yield* configure(github, "POST", { ...runner, name: "runner-host-2" })).toBe(201)
      // A token of the other kind, or a group that does not exist, registers nothing.
      const { token: removal } = yield* provider.removalToken(scope)
      expect(yield* configure(github, "POST", { ...runner, token: removal, name: "x" })).toBe(401)
      expect(yield* configure(github, "POST", { ...runner, runner_group: "nope", name: "x" })).toBe(404)

      expect(Option.isNone(yield* provider.findRunner(scope, "runner"))).toBe(true)
      const found = Option.getOrThrow(yield* provider.findRunner(scope, "runner-host"))
      const group = github.groups().find((g) => g.name === "precheck")!
      expect(found).toEqual({
        id: found.id,
        name: "runner-host",
        status: "online",
        busy: false,
        labels: ["self-hosted", "Linux", "X64", "precheck"],
        runner_group_id: group.id
      })

      expect(yield* provider.deleteRunner(scope, found.id)).toBe("deleted")
      expect(yield* provider.deleteRunner(scope, found.id)).toBe("absent")
      expect(Option.isNone(yield* provider.findRunner(scope, "runner-host"))).toBe(true)

      // Removal needs a removal token; a runner the provider no longer knows cannot be removed.
      expect(yield* configure(github, "DELETE", { token, name: "runner-host-2" })).toBe(401)
      expect(yield* configure(github, "DELETE", { token: removal, name: "runner-host-2" })).toBe(204)
      expect(yield* configure(github, "POST", { ...runner, name: "runner-host-3" })).toBe(201)
      github.removeRunnerSilently("runner-host-3")
      expect(yield* configure(github, "DELETE", { token: removal, name: "runner-host-3" })).toBe(404)
      expect(github.runners()).toEqual([])
    })
  )

  it.scoped("no error detail holds the credential, whatever GitHub echoes", () =>
    Effect.gen(function* () {
      const github = yield* fake
      const scope = scopeOf(github)
      github.failNext("/orgs/acme/actions/runners", { status: 400, body: { message: `bad token ${CREDENTIAL}` } })
      const error = yield* failure(provider.findRunner(scope, "runner-host"))
      expect(error.detail).toContain("bad token [redacted]")
      // A credential that is not a valid header value: fetch's own message would quote it.
      const invalid = yield* failure(provider.deleteRunner({ ...scope, credential: `${CREDENTIAL}\nx` }, 1))
      expect(invalid).toMatchObject({ _tag: "RunnerProviderUnavailable" })
      expect(invalid.detail).toContain("[redacted]")
    })
  )
})
