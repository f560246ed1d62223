// Baseline: the least a health probe can do — raw node:http answering after a better-sqlite3
// `SELECT 1` on a WAL file, no framework.
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import Database from "better-sqlite3"

const dir = process.env.BENCH_DIR
fs.mkdirSync(dir, { recursive: true })
const db = new Database(path.join(dir, "raw.db"))
db.pragma("journal_mode = WAL")
db.pragma("synchronous = NORMAL") // as Keel (KEEL_SQLITE_SYNCHRONOUS=normal)
const ping = db.prepare("SELECT 1 AS ok")
const body = JSON.stringify({ status: "ok" })

const server = http.createServer((req, res) => {
  if (req.url === "/api/health") {
    ping.get()
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
    res.end(body)
  } else {
    res.writeHead(404).end()
  }
})
server.listen(Number(process.env.BENCH_PORT ?? 0), "127.0.0.1")
process.on("SIGTERM", () => server.close(() => process.exit(0)))
