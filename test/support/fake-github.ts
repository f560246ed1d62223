import { randomBytes } from "node:crypto"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

/**
 * A stand-in for GitHub's REST API (the self-hosted runner endpoints Keel uses, in GitHub's documented shapes) with
 * state, served under `/` and under `/api/v3` (an Enterprise Server's base). Besides them one endpoint of its own,
 * `/_fake/runners`, lets a fake runner archive's `config.sh` register and remove a runner with the tokens issued here,
 * as the real runner does against GitHub's runner service.
 */

export interface FakeRepository {
  readonly full_name: string
  readonly id: number
  readonly private: boolean
}

export interface FakeGroup {
  readonly id: number
  name: string
  visibility: "all" | "selected" | "private"
  allows_public_repositories: boolean
  restricted_to_workflows: boolean
  repository_ids: Array<number>
  readonly default: boolean
}

export interface FakeRunner {
  readonly id: number
  readonly name: string
  readonly os: "Linux" | "macOS"
  readonly labels: ReadonlyArray<string>
  readonly runner_group_id: number
}

export interface FakeRequest {
  readonly method: string
  /** As sent, base prefix and query included. */
  readonly path: string
  readonly authorization: string | undefined
  readonly headers: http.IncomingHttpHeaders
}

export interface ForcedResponse {
  readonly status: number
  /** JSON, or a string sent as it is (an answer that is not JSON). */
  readonly body?: unknown
  readonly headers?: Record<string, string>
  /** Only a request of this method takes it. */
  readonly method?: string
  /** Answer only after this long (to exceed a client's timeout). */
  readonly delayMs?: number
}

export interface FakeGithub {
  /** The base URL, e.g. http://127.0.0.1:PORT (append /api/v3 for an Enterprise Server's base). */
  readonly url: string
  /** The URL on `alsoOn`, when given. */
  readonly alsoUrl: string | undefined
  readonly close: () => Promise<void>
  readonly requests: Array<FakeRequest>
  /** The next request whose path (base prefix and query stripped) starts with `pathPrefix` gets `response`. */
  readonly failNext: (pathPrefix: string, response: ForcedResponse) => void
  readonly repositories: () => ReadonlyArray<FakeRepository>
  readonly groups: () => ReadonlyArray<FakeGroup>
  readonly runners: () => ReadonlyArray<FakeRunner>
  /** Every registration and removal token issued so far. */
  readonly issuedTokens: () => ReadonlyArray<string>
  /** Forgets a runner without any request: the provider "no longer knows" it. */
  readonly removeRunnerSilently: (name: string) => void
}

export interface FakeGithubOptions {
  readonly host?: string
  /** A second address to serve on, as well. */
  readonly alsoOn?: string
  readonly credential?: string
  readonly org?: string
  readonly repositories?: ReadonlyArray<FakeRepository>
}

const DOCS = "https://docs.github.com/rest"
const notFound = { message: "Not Found", documentation_url: DOCS }

export const startFakeGithub = async (options: FakeGithubOptions = {}): Promise<FakeGithub> => {
  const credential = options.credential ?? "ghp_fake_credential"
  const org = options.org ?? "acme"
  const repositories = [...(options.repositories ?? [])]
  // Every organization has its "Default" group (id 1), which cannot be restricted to selected repositories here.
  const groups: Array<FakeGroup> = [
    {
      id: 1,
      name: "Default",
      visibility: "all",
      allows_public_repositories: false,
      restricted_to_workflows: false,
      repository_ids: [],
      default: true
    }
  ]
  const runners: Array<FakeRunner> = []
  const tokens: Array<{ token: string; kind: "registration" | "removal"; expires: number }> = []
  const requests: Array<FakeRequest> = []
  const forced: Array<{ prefix: string; response: ForcedResponse }> = []
  let nextId = 100

  const repositoryJson = (r: FakeRepository) => {
    const [owner = "", name = ""] = r.full_name.split("/")
    return {
      id: r.id,
      node_id: `R_${r.id}`,
      name,
      full_name: r.full_name,
      private: r.private,
      visibility: r.private ? "private" : "public",
      owner: { login: owner, type: "Organization" }
    }
  }
  const groupJson = (g: FakeGroup, base: string) => ({
    id: g.id,
    name: g.name,
    visibility: g.visibility,
    default: g.default,
    selected_repositories_url: `${base}/orgs/${org}/actions/runner-groups/${g.id}/repositories`,
    runners_url: `${base}/orgs/${org}/actions/runner-groups/${g.id}/runners`,
    inherited: false,
    allows_public_repositories: g.allows_public_repositories,
    restricted_to_workflows: g.restricted_to_workflows,
    selected_workflows: [],
    workflow_restrictions_read_only: false
  })
  const runnerJson = (r: FakeRunner) => ({
    id: r.id,
    name: r.name,
    os: r.os,
    status: "online",
    busy: false,
    ephemeral: false,
    runner_group_id: r.runner_group_id,
    labels: r.labels.map((name, i) => ({ id: i + 1, name, type: i < 3 ? "read-only" : "custom" }))
  })
  const issue = (kind: "registration" | "removal") => {
    const expires = Date.now() + 3_600_000
    const token = `A${randomBytes(16).toString("hex").toUpperCase()}`
    tokens.push({ token, kind, expires })
    return { token, expires_at: new Date(expires).toISOString() }
  }
  const live = (token: unknown, kind: "registration" | "removal") =>
    tokens.some((t) => t.token === token && t.kind === kind && t.expires > Date.now())

  type Json = { readonly [key: string]: unknown }
  type Reply = { status: number; body?: unknown; headers?: Record<string, string> }
  const validation = (message: string): Reply => ({
    status: 422,
    body: { message: "Validation Failed", errors: [{ resource: "RunnerGroup", code: "invalid", message }] }
  })
  const repositoryIds = (ids: unknown): Array<number> | undefined =>
    Array.isArray(ids) && ids.every((id) => repositories.some((r) => r.id === id)) ? [...new Set(ids)] : undefined

  /** GitHub's endpoints, the path relative to the API base; undefined when none matches. */
  const github = (
    method: string,
    path: string,
    query: URLSearchParams,
    body: Json,
    base: string
  ): Reply | undefined => {
    const repo = path.match(/^\/repos\/([^/]+)\/([^/]+)$/)
    if (repo !== null && method === "GET") {
      const name = `${decodeURIComponent(repo[1]!)}/${decodeURIComponent(repo[2]!)}`.toLowerCase()
      const found = repositories.find((r) => r.full_name.toLowerCase() === name)
      return found === undefined ? { status: 404, body: notFound } : { status: 200, body: repositoryJson(found) }
    }
    const actions = path.match(/^\/orgs\/([^/]+)\/actions(\/.*)$/)
    if (actions === null) return undefined
    if (decodeURIComponent(actions[1]!) !== org) return { status: 404, body: notFound }
    const rest = actions[2]!
    const runnerId = rest.match(/^\/runners\/(\d+)$/)
    const groupId = rest.match(/^\/runner-groups\/(\d+)(\/repositories)?$/)
    const route = `${method} ${rest}`
    if (route === "POST /runners/registration-token") return { status: 201, body: issue("registration") }
    if (route === "POST /runners/remove-token") return { status: 201, body: issue("removal") }
    if (route === "GET /runners") {
      const name = query.get("name")
      const list = runners.filter((r) => name === null || r.name === name).slice(0, Number(query.get("per_page") ?? 30))
      return { status: 200, body: { total_count: list.length, runners: list.map(runnerJson) } }
    }
    if (runnerId !== null) {
      const runner = runners.find((r) => r.id === Number(runnerId[1]))
      if (runner === undefined) return { status: 404, body: notFound }
      if (method === "GET") return { status: 200, body: runnerJson(runner) }
      if (method === "DELETE") {
        runners.splice(runners.indexOf(runner), 1)
        return { status: 204 }
      }
      return undefined
    }
    if (route === "GET /runner-groups")
      return { status: 200, body: { total_count: groups.length, runner_groups: groups.map((g) => groupJson(g, base)) } }
    if (route === "POST /runner-groups") {
      const name = body.name
      if (typeof name !== "string" || name === "") return validation("name is missing")
      if (groups.some((g) => g.name.toLowerCase() === name.toLowerCase()))
        return validation(`a runner group named ${name} already exists`)
      const ids = repositoryIds(body.selected_repository_ids ?? [])
      if (ids === undefined) return validation("selected_repository_ids names an unknown repository")
      const group: FakeGroup = {
        id: nextId++,
        name,
        visibility: (body.visibility as FakeGroup["visibility"] | undefined) ?? "all",
        allows_public_repositories: body.allows_public_repositories === true,
        restricted_to_workflows: body.restricted_to_workflows === true,
        repository_ids: ids,
        default: false
      }
      groups.push(group)
      return { status: 201, body: groupJson(group, base) }
    }
    if (groupId !== null) {
      const group = groups.find((g) => g.id === Number(groupId[1]))
      if (group === undefined) return { status: 404, body: notFound }
      if (groupId[2] === undefined) {
        if (method === "GET") return { status: 200, body: groupJson(group, base) }
        if (method === "PATCH") {
          if (group.default && body.visibility === "selected")
            return validation("the default group cannot be restricted to selected repositories")
          if (typeof body.name === "string") group.name = body.name
          if (typeof body.visibility === "string") group.visibility = body.visibility as FakeGroup["visibility"]
          if (typeof body.allows_public_repositories === "boolean")
            group.allows_public_repositories = body.allows_public_repositories
          if (typeof body.restricted_to_workflows === "boolean")
            group.restricted_to_workflows = body.restricted_to_workflows
          return { status: 200, body: groupJson(group, base) }
        }
        return undefined
      }
      if (method === "GET") {
        const list = repositories.filter((r) => group.repository_ids.includes(r.id))
        return { status: 200, body: { total_count: list.length, repositories: list.map(repositoryJson) } }
      }
      if (method === "PUT") {
        const ids = repositoryIds(body.selected_repository_ids)
        if (ids === undefined) return validation("selected_repository_ids names an unknown repository")
        group.repository_ids = ids
        return { status: 204 }
      }
    }
    return undefined
  }

  /** What the runner's own registration does: only with a live token of the right kind. */
  const fakeRunners = (method: string, body: Json): Reply => {
    if (method === "POST") {
      if (!live(body.token, "registration")) return { status: 401, body: { message: "Bad registration token" } }
      const group = groups.find((g) => g.name === body.runner_group)
      if (group === undefined) return { status: 404, body: { message: `no runner group ${body.runner_group}` } }
      if (typeof body.name !== "string" || (body.os !== "Linux" && body.os !== "macOS"))
        return { status: 400, body: { message: "name and os are required" } }
      // Like `config.sh --replace`: a runner of the same name is replaced.
      const previous = runners.findIndex((r) => r.name === body.name)
      if (previous >= 0) runners.splice(previous, 1)
      const custom = Array.isArray(body.labels) ? body.labels : []
      const labels = ["self-hosted", body.os, body.arch, ...custom].filter(
        (l): l is string => typeof l === "string" && l !== ""
      )
      const runner: FakeRunner = {
        id: nextId++,
        name: body.name,
        os: body.os,
        labels: [...new Set(labels)],
        runner_group_id: group.id
      }
      runners.push(runner)
      return { status: 201, body: { id: runner.id } }
    }
    if (method === "DELETE") {
      if (!live(body.token, "removal")) return { status: 401, body: { message: "Bad removal token" } }
      const index = runners.findIndex((r) => r.name === body.name)
      if (index < 0) return { status: 404, body: { message: `no runner ${body.name}` } }
      runners.splice(index, 1)
      return { status: 204 }
    }
    return { status: 405, body: { message: "Method Not Allowed" } }
  }

  const handle = (request: http.IncomingMessage, response: http.ServerResponse) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const method = request.method ?? "GET"
      const url = new URL(request.url ?? "/", "http://fake")
      const prefixed = url.pathname.startsWith("/api/v3/")
      const path = prefixed ? url.pathname.slice("/api/v3".length) : url.pathname
      const base = `${address}${prefixed ? "/api/v3" : ""}`
      requests.push({
        method,
        path: request.url ?? "/",
        authorization: request.headers.authorization,
        headers: request.headers
      })
      const send = (reply: Reply) => {
        const text =
          reply.body === undefined ? "" : typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body)
        response.writeHead(reply.status, {
          ...(text === "" ? {} : { "content-type": "application/json; charset=utf-8" }),
          ...reply.headers
        })
        response.end(text)
      }

      const i = forced.findIndex((f) => path.startsWith(f.prefix) && (f.response.method ?? method) === method)
      if (i >= 0) {
        const reply = forced.splice(i, 1)[0]!.response
        if (reply.delayMs === undefined) send(reply)
        else
          setTimeout(() => {
            if (!response.destroyed) send(reply)
          }, reply.delayMs)
        return
      }

      let body: Json = {}
      try {
        const parsed: unknown = chunks.length === 0 ? {} : JSON.parse(Buffer.concat(chunks).toString("utf8"))
        if (typeof parsed === "object" && parsed !== null) body = parsed as Json
      } catch {
        return send({ status: 400, body: { message: "Problems parsing JSON", documentation_url: DOCS } })
      }
      if (path === "/_fake/runners") return send(fakeRunners(method, body))
      if (request.headers.authorization !== `Bearer ${credential}`)
        return send({ status: 401, body: { message: "Bad credentials", documentation_url: DOCS } })
      send(github(method, path, url.searchParams, body, base) ?? { status: 404, body: notFound })
    })
  }

  const listen = async (on: string) => {
    const server = http.createServer(handle)
    await new Promise<void>((resolve) => server.listen(0, on, resolve))
    const { address: host, port } = server.address() as AddressInfo
    return { server, url: `http://${host.includes(":") ? `[${host}]` : host}:${port}` }
  }
  const main = await listen(options.host ?? "127.0.0.1")
  // The same fake on a second address (a runner host in a network namespace reaches it there).
  const second = options.alsoOn === undefined ? undefined : await listen(options.alsoOn)
  const servers = [main.server, ...(second === undefined ? [] : [second.server])]
  const address = main.url

  return {
    url: address,
    alsoUrl: second?.url,
    close: () =>
      Promise.all(
        servers.map(
          (server) =>
            new Promise<void>((resolve) => {
              server.close(() => resolve())
              // fetch keeps connections alive: without this the server would wait for them to idle out.
              server.closeAllConnections()
            })
        )
      ).then(() => undefined),
    requests,
    failNext: (prefix, response) => {
      forced.push({ prefix, response })
    },
    repositories: () => repositories,
    groups: () => groups.map((g) => ({ ...g, repository_ids: [...g.repository_ids] })),
    runners: () => [...runners],
    issuedTokens: () => tokens.map((t) => t.token),
    removeRunnerSilently: (name) => {
      const index = runners.findIndex((r) => r.name === name)
      if (index >= 0) runners.splice(index, 1)
    }
  }
}
