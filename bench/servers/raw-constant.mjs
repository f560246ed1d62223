// The floor of the floor: raw node:http answering a constant JSON body, no database, no framework.
import * as http from "node:http"

const body = JSON.stringify({ status: "ok" })
// Any request body is read to its end first (the hot routes' floors send one), then the constant answer;
// the collector's path answers 202 like the real one.
const server = http.createServer((req, res) => {
  req.resume()
  req.on("end", () => {
    const status = req.url === "/api/analytics/web/collect" ? 202 : 200
    res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
    res.end(body)
  })
})
server.listen(Number(process.env.BENCH_PORT ?? 0), "127.0.0.1")
process.on("SIGTERM", () => server.close(() => process.exit(0)))
