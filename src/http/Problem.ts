/**
 * The server side of the one error body (RFC 9457 problem details; its vocabulary, shared with the typed clients,
 * is contracts/shared/Problem.ts): the middleware that answers every error in that shape, and the pure rewriting
 * of a typed error or a decode failure into its members.
 */
import { HttpServerError, HttpServerRequest, HttpServerResponse, Multipart } from "@effect/platform"
import { Cause, Effect, Option } from "effect"
import { codeFromTag, PROBLEM_CONTENT_TYPE, problem, statusTitle } from "../contracts/shared/Problem.js"
import {
  plainExpectation,
  relevantIssues,
  shortened,
  withoutValue,
  withoutValues
} from "../services/platform/Validation.js"

const defaultCodes: Record<number, string> = {
  400: "BAD_REQUEST",
  401: "UNAUTHORIZED",
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  405: "METHOD_NOT_ALLOWED",
  408: "REQUEST_TIMEOUT",
  409: "CONFLICT",
  413: "PAYLOAD_TOO_LARGE",
  415: "UNSUPPORTED_MEDIA_TYPE",
  422: "UNPROCESSABLE",
  429: "RATE_LIMITED",
  431: "REQUEST_HEADER_FIELDS_TOO_LARGE",
  499: "CLIENT_CLOSED_REQUEST",
  500: "INTERNAL_ERROR",
  503: "SERVICE_UNAVAILABLE"
}

export const problemResponse = (
  status: number,
  code: string,
  detail: string,
  options: { readonly extensions?: Record<string, unknown>; readonly headers?: Record<string, string> } = {}
) =>
  HttpServerResponse.text(JSON.stringify(problem(status, code, detail, options.extensions)), {
    status,
    contentType: PROBLEM_CONTENT_TYPE,
    ...(options.headers ? { headers: options.headers } : {})
  })

interface DecodeIssue {
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

/** One invalid field of a request: a dotted path into the body, path or query (`""`: the whole of it). */
export interface FieldError {
  readonly path: string
  readonly message: string
}

/**
 * Decode issues that name the field and what it must be, never the value sent (it may be a secret); the
 * "Expected undefined" twin of an optional field's real issue is left out.
 */
const fieldErrors = (issues: ReadonlyArray<DecodeIssue>): Array<FieldError> =>
  eachFieldOnce(
    relevantIssues(
      issues.map((issue) => ({ path: Array.isArray(issue.path) ? issue.path : [], message: String(issue.message) }))
    ).map((issue) => ({
      path: issue.path.map(String).join("."),
      message: plainExpectation(withoutValue(issue.message))
    }))
  )

/**
 * Each invalid field once (docs/errors.md): a union's members each report their own issue at the same path
 * (`period` of `"1h" | "24h" | …` gives one `Expected "1h"` per member); they become one message,
 * `Expected one of "1h", "24h", …` when every one is an `Expected X`, else the messages joined by "or".
 */
const eachFieldOnce = (errors: ReadonlyArray<FieldError>): Array<FieldError> => {
  const byPath = new Map<string, Array<string>>()
  for (const error of errors) {
    const messages = byPath.get(error.path) ?? []
    if (!messages.includes(error.message)) messages.push(error.message)
    byPath.set(error.path, messages)
  }
  return [...byPath].map(([path, messages]) => {
    if (messages.length === 1) return { path, message: messages[0] ?? "" }
    const expected = messages.map((m) => /^Expected (.+)$/.exec(m)?.[1])
    return {
      path,
      message: expected.every((e) => e !== undefined) ? `Expected one of ${expected.join(", ")}` : messages.join(" or ")
    }
  })
}

/**
 * The query parameter names a request sends more than once, read as the router reads its query (`&`-separated,
 * `+` a space, percent-decoded; a query that is not valid percent-encoding never reaches a route).
 */
export const repeatedQueryNames = (url: string): ReadonlySet<string> => {
  const at = url.indexOf("?")
  const repeated = new Set<string>()
  if (at < 0) return repeated
  const seen = new Set<string>()
  for (const [name] of new URLSearchParams(url.slice(at + 1))) {
    if (seen.has(name)) repeated.add(name)
    seen.add(name)
  }
  return repeated
}

/** What a parameter a route reads as one value answers when the query repeats it (docs/errors.md). */
export const SENT_ONCE = "must be sent once"

const describeFieldErrors = (errors: ReadonlyArray<FieldError>) => {
  const [first] = errors
  if (first === undefined) return "the request does not match its schema"
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : ""
  return `${first.path === "" ? "(root)" : first.path}: ${first.message}${more}`
}

/**
 * Members of an error value that are not for clients: `_tag` names the server's class, `message` repeats
 * `detail`, `issues` is the decoder's own tree (answered as `errors`), and the problem members are set here.
 */
const INTERNAL_MEMBERS = new Set(["_tag", "message", "issues", "type", "title", "status", "detail", "code"])

const extensionsOf = (record: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(record).filter(([key]) => !INTERNAL_MEMBERS.has(key)))

const asRecord = (u: unknown): Record<string, unknown> | undefined =>
  typeof u === "object" && u !== null && !Array.isArray(u) ? (u as Record<string, unknown>) : undefined

/**
 * Turns whatever body an error response carries into a problem body: the five problem members, the typed
 * error's own fields as extensions, and for a request that does not match its schema `errors: [{path,
 * message}]`. Pure, for testing.
 */
export const toProblemBody = (
  status: number,
  body: unknown,
  fallbackDetail: string,
  /** The query's repeated names (`repeatedQueryNames`): a decode issue at one of them about a list is the repetition. */
  repeatedQuery: ReadonlySet<string> = new Set()
): Record<string, unknown> => {
  const record = asRecord(body)
  if (record === undefined)
    return problem(status, defaultCodes[status] ?? codeFromTag(statusTitle(status)), fallbackDetail)
  const tag = typeof record._tag === "string" ? record._tag : undefined
  if (tag === "HttpApiDecodeError") {
    // The platform's own `message` (and each issue's) quotes the offending value: both are rebuilt
    // without it, so a mistyped secret is never echoed back.
    // Every parameter a route reads is one value: the platform hands a repeated one to its schema as a list,
    // whose issue ("Expected string, actual [...]") would not say what is wrong. Only an issue about a list is the
    // repetition: a path parameter or header of the same name is always one text, and its own issue stands.
    const issues = Array.isArray(record.issues) ? (record.issues as Array<DecodeIssue>) : []
    const listsAt = new Set(
      issues
        .filter((issue) => /\bactual \[/.test(String(issue.message)))
        .map((issue) => (Array.isArray(issue.path) ? issue.path.map(String).join(".") : ""))
    )
    const errors = fieldErrors(issues).map((error) =>
      repeatedQuery.has(error.path) && listsAt.has(error.path) ? { path: error.path, message: SENT_ONCE } : error
    )
    return problem(status, "VALIDATION_FAILED", describeFieldErrors(errors), { errors })
  }
  const code =
    typeof record.code === "string" && /^[A-Z][A-Z0-9_]*$/.test(record.code)
      ? record.code
      : tag !== undefined
        ? codeFromTag(tag)
        : (defaultCodes[status] ?? "ERROR")
  const detail =
    typeof record.detail === "string"
      ? record.detail
      : typeof record.message === "string"
        ? record.message
        : fallbackDetail
  // Bad input is described, never quoted: a typed error's schema message loses its `, actual <value>`.
  return problem(status, code, status === 400 ? withoutValues(detail) : detail, extensionsOf(record))
}

const readJsonBody = (response: HttpServerResponse.HttpServerResponse): unknown => {
  const body = response.body
  try {
    if (body._tag === "Uint8Array") return JSON.parse(new TextDecoder().decode(body.body))
    if (body._tag === "Raw" && typeof body.body === "string") return JSON.parse(body.body)
  } catch {
    return undefined
  }
  return undefined
}

type BodyProblem = readonly [status: number, code: string, detail: string]

/** A body sent as multipart/form-data that is not, or is over the parser's limits. */
const multipartProblem = (error: Multipart.MultipartError): Option.Option<BodyProblem> => {
  switch (error.reason) {
    case "Parse":
      return Option.some([400, "BAD_REQUEST_BODY", "the request body is not valid multipart/form-data"])
    case "InternalError":
      return Option.none()
    default:
      return Option.some([413, "PAYLOAD_TOO_LARGE", "a part of the multipart/form-data request body is too large"])
  }
}

/** What went wrong when the request body itself could not be read or parsed. */
const requestBodyProblem = (cause: Cause.Cause<unknown>) =>
  Cause.find(cause, (reason): Option.Option<BodyProblem> => {
    if (!Cause.isDieType(reason)) return Option.none()
    const defect = reason.defect
    if (defect instanceof Multipart.MultipartError) return multipartProblem(defect)
    if (!HttpServerError.isServerError(defect) || defect._tag !== "RequestError") return Option.none()
    // The parser's message quotes part of the body (which may be a secret): never pass it on.
    if (defect.cause instanceof SyntaxError) return Option.some([400, "INVALID_JSON", "request body is not valid JSON"])
    if (defect.reason === "Decode") return Option.some([400, "BAD_REQUEST_BODY", "the request body could not be read"])
    return Option.none()
  })

/**
 * Global middleware: every response with status >= 400 leaves in the problem shape, whether it came from
 * a typed error, a schema decode failure, an unparsable body, an unknown route or a defect. Defects are
 * logged with their cause and answered as a bare 500 problem: no stack trace ever reaches a client.
 */
export const problemMiddleware = <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const response = yield* app.pipe(
      Effect.catchAllCause((cause) =>
        Effect.gen(function* () {
          const bodyProblem = requestBodyProblem(cause)
          if (Option.isSome(bodyProblem)) {
            const [status, code, detail] = bodyProblem.value
            return yield* problemResponse(status, code, detail)
          }
          const [response] = yield* HttpServerError.causeResponse(cause)
          if (response.status >= 500 && !Cause.isInterruptedOnly(cause)) {
            yield* Effect.logError("request failed", cause).pipe(
              Effect.annotateLogs({ method: request.method, url: request.url })
            )
          }
          return response
        })
      )
    )
    if (response.status < 400) return response
    const contentType =
      response.headers["content-type"] ?? (response.body._tag === "Uint8Array" ? response.body.contentType : "")
    if (contentType.startsWith(PROBLEM_CONTENT_TYPE)) return response
    const fallback =
      response.status === 404
        ? `no route for ${request.method} ${shortened(request.url.split("?")[0] ?? "", 200)}`
        : response.status >= 500
          ? "the server failed to handle the request; it has been logged"
          : statusTitle(response.status)
    const body = toProblemBody(response.status, readJsonBody(response), fallback, repeatedQueryNames(request.url))
    const { "content-type": _ct, "content-length": _cl, ...headers } = response.headers
    return yield* HttpServerResponse.text(JSON.stringify(body), {
      status: response.status,
      contentType: PROBLEM_CONTENT_TYPE,
      headers
    })
  })
