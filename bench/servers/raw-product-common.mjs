// What both raw product baselines (raw-product.mjs on better-sqlite3, raw-product-pg.mjs on node-postgres) share
// besides their statements: the experiment (BENCH_EXPERIMENT), the readout's derived values and the HTTP side.
import * as http from "node:http"

export const experiment = JSON.parse(process.env.BENCH_EXPERIMENT)

// The readout's derived values, in JS (Keel's collector derives them in TypeScript too: ReadoutSql.ts).
export const pageOf = (url) => {
  if (url === null || url === "") return null
  const rest = url.includes("://") ? url.slice(url.indexOf("://") + 3) : url
  const path = url.includes("://") ? (rest.includes("/") ? rest.slice(rest.indexOf("/")) : "/") : url
  return path.split(/[?#]/)[0] || "/"
}
export const hostOf = (referrer) => {
  if (referrer === null || referrer === "") return null
  const rest = referrer.includes("://") ? referrer.slice(referrer.indexOf("://") + 3) : referrer
  const host = rest.split(/[/?#:]/)[0].toLowerCase()
  return (host.startsWith("www.") ? host.slice(4) : host) || null
}

const send = (res, status, body) => {
  const text = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
  res.end(text)
}
/** `answer` is the body (SQLite) or a promise of it (PostgreSQL). */
const sendWhenDone = (res, status, answer) => {
  if (!(answer instanceof Promise)) return send(res, status, answer)
  answer.then(
    (body) => send(res, status, body),
    (e) => send(res, 500, { code: "INTERNAL", detail: String(e) })
  )
}

/**
 * The HTTP server on BENCH_PORT: `GET /api/experiments/assign` → `assign(subject)`, `POST
 * /api/analytics/web/collect` → `collect(batch)` (202), `/api/health`.
 */
export const serve = ({ assign, collect }) =>
  http
    .createServer((req, res) => {
      const url = new URL(req.url, "http://x")
      if (url.pathname === "/api/experiments/assign") {
        return sendWhenDone(res, 200, assign(url.searchParams.get("subject")))
      }
      if (url.pathname === "/api/analytics/web/collect") {
        let body = ""
        req.setEncoding("utf8")
        req.on("data", (c) => {
          body += c
        })
        req.on("end", () => sendWhenDone(res, 202, collect(JSON.parse(body))))
        return
      }
      if (url.pathname === "/api/health") return send(res, 200, { status: "ok" })
      res.writeHead(404).end()
    })
    .listen(Number(process.env.BENCH_PORT), "127.0.0.1")
