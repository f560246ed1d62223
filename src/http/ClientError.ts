import type * as Http from "node:http"
import type { Duplex } from "node:stream"
import { PROBLEM_CONTENT_TYPE, problem, statusTitle } from "../contracts/shared/Problem.js"

interface ParserRefusal {
  readonly status: number
  readonly code: string
  readonly detail: string
}

/** How long an answer to a refused request may take to flush before its connection is cut. */
const FLUSH_GRACE_MILLIS = 5_000

const badRequest = (detail: string): ParserRefusal => ({ status: 400, code: "BAD_REQUEST", detail })

/**
 * What Node's HTTP parser refuses before any route sees a request, by the error's code. Each detail is a
 * fixed sentence: nothing of the refused bytes is quoted.
 */
const parserRefusals: Record<string, ParserRefusal> = {
  HPE_HEADER_OVERFLOW: {
    status: 431,
    code: "REQUEST_HEADER_FIELDS_TOO_LARGE",
    detail: "the request's headers are larger than the server accepts"
  },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: {
    status: 413,
    code: "PAYLOAD_TOO_LARGE",
    detail: "the chunk extensions of the request body are larger than the server accepts"
  },
  ERR_HTTP_REQUEST_TIMEOUT: {
    status: 408,
    code: "REQUEST_TIMEOUT",
    detail: "the request was not received in time"
  },
  HPE_INVALID_CONTENT_LENGTH: badRequest("the Content-Length header is not a valid length"),
  HPE_UNEXPECTED_CONTENT_LENGTH: badRequest("the request has more than one Content-Length"),
  HPE_INVALID_TRANSFER_ENCODING: badRequest(
    "the Transfer-Encoding header is not valid, or comes with a Content-Length (a request may not have both)"
  ),
  HPE_INVALID_CHUNK_SIZE: badRequest("a chunk of the request body has an invalid size"),
  HPE_INVALID_METHOD: badRequest("the request method is not valid"),
  HPE_INVALID_URL: badRequest("the request target is not valid"),
  HPE_INVALID_VERSION: badRequest("the HTTP version is not valid"),
  HPE_INVALID_HEADER_TOKEN: badRequest("a request header is not valid")
}

/** The problem a parser error is answered with (400 BAD_REQUEST unless a more precise one applies). */
export const parserRefusal = (error: { readonly code?: string | undefined }): ParserRefusal =>
  (error.code !== undefined ? parserRefusals[error.code] : undefined) ?? badRequest("the request is not valid HTTP/1.1")

/** The whole HTTP/1.1 answer to a parser error, as bytes to write to the socket. */
export const parserRefusalResponse = (error: { readonly code?: string | undefined }) => rawProblem(parserRefusal(error))

/** A refusal as a whole HTTP/1.1 answer written to the socket itself (no response object exists for it). */
const rawProblem = (refusal: ParserRefusal) => {
  const body = JSON.stringify(problem(refusal.status, refusal.code, refusal.detail))
  return (
    `HTTP/1.1 ${refusal.status} ${statusTitle(refusal.status)}\r\n` +
    `Content-Type: ${PROBLEM_CONTENT_TYPE}\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    "Connection: close\r\n" +
    "\r\n" +
    body
  )
}

/**
 * Node's `clientError` handler: a request its HTTP parser refuses (a bad or duplicated Content-Length,
 * Content-Length with Transfer-Encoding, headers too large, a timeout) gets a problem body instead of
 * Node's bare answer, then the connection is closed. As in Node's own handler, nothing is written when
 * the connection is gone or a response on it has already begun (that would corrupt it).
 */
export const answerClientError = (error: Error & { readonly code?: string }, socket: Duplex) => {
  const inFlight = (socket as Duplex & { readonly _httpMessage?: { readonly headersSent?: boolean } })._httpMessage
  if (error.code === "ECONNRESET" || !socket.writable || inFlight?.headersSent === true) {
    socket.destroy()
    return
  }
  endWith(socket, parserRefusalResponse(error))
}

/** Writes a whole answer and closes: destroyed once it is flushed, or after a grace period for a peer not reading. */
const endWith = (socket: Duplex, answer: string) => {
  setTimeout(() => socket.destroy(), FLUSH_GRACE_MILLIS).unref()
  socket.end(answer, () => socket.destroy())
}

/**
 * Installs `answerClientError` on a Node HTTP server, and keeps a client that resets an upgrade request's
 * connection from taking the process down: Node hands such a socket over without its own `error` listener
 * (the request is answered like any other here, Keel has no WebSocket route), so a reset while the answer is
 * written was an unhandled `error` event that ended the server.
 */
export const installClientErrorAnswer = (server: Http.Server) => {
  server.on("clientError", answerClientError)
  // What Node would answer itself with an empty body, answered in the problem shape instead.
  server.on("checkExpectation", (_request: Http.IncomingMessage, response: Http.ServerResponse) => {
    const body = JSON.stringify(
      problem(417, "EXPECTATION_FAILED", "the only expectation this server meets is Expect: 100-continue")
    )
    response.writeHead(417, { "content-type": PROBLEM_CONTENT_TYPE, connection: "close" })
    response.end(body)
  })
  server.on("connect", (_request: Http.IncomingMessage, socket: Duplex) => {
    socket.on("error", () => socket.destroy())
    endWith(socket, rawProblem(badRequest("CONNECT is not served: this server is no proxy")))
  })
  server.on("upgrade", (_request: Http.IncomingMessage, socket: Duplex) => {
    socket.on("error", () => socket.destroy())
  })
  return server
}
