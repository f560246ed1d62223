// The floor of the floor: raw node:http answering a constant JSON body, no database, no framework.
import * as http from "node:http"

const body = JSON.stringify({ status: "ok" })
const server = http.createServer((_req, res) => {
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
})
server.listen(Number(process.env.BENCH_PORT ?? 0), "127.0.0.1")
process.on("SIGTERM", () => server.close(() => process.exit(0)))
