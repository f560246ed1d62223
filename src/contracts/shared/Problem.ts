import { Schema } from "effect"

/**
 * The one error body of every Keel HTTP surface (RFC 9457 problem details): its vocabulary, shared by the
 * server (http/Problem.ts writes it), the typed clients (which read it back) and services that answer HTTP
 * themselves (the runner gateway). Runtime-free: no `node:http`, so a browser bundle of the clients holds.
 * `code` is the stable, machine-readable UPPER_SNAKE identifier clients switch on; `type` is a URN derived from
 * it. Fields of the originating typed error stay in the body as extension members.
 */
export class ProblemDetails extends Schema.Class<ProblemDetails>("ProblemDetails")({
  type: Schema.String,
  title: Schema.String,
  status: Schema.Int,
  detail: Schema.String,
  code: Schema.String.pipe(Schema.pattern(/^[A-Z][A-Z0-9_]*$/))
}) {}

export const PROBLEM_CONTENT_TYPE = "application/problem+json"

/**
 * The reason phrases Node writes on the status line (`node:http`'s STATUS_CODES, copied so the contracts stay
 * runtime-free; test/contracts/problem.test.ts holds it equal to Node's).
 */
export const STATUS_TITLES: Readonly<Record<number, string>> = {
  100: "Continue",
  101: "Switching Protocols",
  102: "Processing",
  103: "Early Hints",
  200: "OK",
  201: "Created",
  202: "Accepted",
  203: "Non-Authoritative Information",
  204: "No Content",
  205: "Reset Content",
  206: "Partial Content",
  207: "Multi-Status",
  208: "Already Reported",
  226: "IM Used",
  300: "Multiple Choices",
  301: "Moved Permanently",
  302: "Found",
  303: "See Other",
  304: "Not Modified",
  305: "Use Proxy",
  307: "Temporary Redirect",
  308: "Permanent Redirect",
  400: "Bad Request",
  401: "Unauthorized",
  402: "Payment Required",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  406: "Not Acceptable",
  407: "Proxy Authentication Required",
  408: "Request Timeout",
  409: "Conflict",
  410: "Gone",
  411: "Length Required",
  412: "Precondition Failed",
  413: "Payload Too Large",
  414: "URI Too Long",
  415: "Unsupported Media Type",
  416: "Range Not Satisfiable",
  417: "Expectation Failed",
  418: "I'm a Teapot",
  421: "Misdirected Request",
  422: "Unprocessable Entity",
  423: "Locked",
  424: "Failed Dependency",
  425: "Too Early",
  426: "Upgrade Required",
  428: "Precondition Required",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  451: "Unavailable For Legal Reasons",
  500: "Internal Server Error",
  501: "Not Implemented",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
  505: "HTTP Version Not Supported",
  506: "Variant Also Negotiates",
  507: "Insufficient Storage",
  508: "Loop Detected",
  509: "Bandwidth Limit Exceeded",
  510: "Not Extended",
  511: "Network Authentication Required"
}

/**
 * The title is the reason phrase Node writes on the status line (`413 Payload Too Large`), so the body and
 * the status line never disagree; 499 has none in Node and is never seen by the client that closed.
 */
export const statusTitle = (status: number) =>
  STATUS_TITLES[status] ?? (status === 499 ? "Client Closed Request" : status >= 500 ? "Server Error" : "Client Error")

/** `AgentNotFound` → `AGENT_NOT_FOUND`, `HttpApiDecodeError` → `HTTP_API_DECODE_ERROR`. */
export const codeFromTag = (tag: string) =>
  tag
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1_$2")
    .replace(/[^A-Za-z0-9]+/g, "_")
    .toUpperCase()

export const problemType = (code: string) => `urn:keel:problem:${code.toLowerCase().replace(/_/g, "-")}`

/** A problem body: the typed error's own fields as extensions, then the five problem members. */
export const problem = (
  status: number,
  code: string,
  detail: string,
  extensions: Record<string, unknown> = {}
): Record<string, unknown> => ({
  ...extensions,
  type: problemType(code),
  title: statusTitle(status),
  status,
  detail,
  code
})
