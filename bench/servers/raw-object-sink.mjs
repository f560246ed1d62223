// Baseline for bench/objects.mjs: raw node:http that streams a PUT body to a temporary file beside the
// target, hashing it on the way, fsyncs and renames it — the work Keel's fs object store does per upload.
import { createHash, randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"

const dir = process.env.BENCH_OBJECT_DIR
const server = http.createServer((req, res) => {
  if (req.url === "/api/health") return res.end("ok")
  const target = path.join(dir, decodeURIComponent(req.url.replace(/^\/api\/objects\//, "")))
  fs.mkdirSync(path.dirname(target), { recursive: true })
  const temp = path.join(path.dirname(target), `.tmp-${randomBytes(8).toString("hex")}`)
  const out = fs.createWriteStream(temp)
  const hash = createHash("sha256")
  let size = 0
  req.on("data", (chunk) => {
    hash.update(chunk)
    size += chunk.length
  })
  req.pipe(out)
  out.on("finish", () => {
    const fd = fs.openSync(temp, "r")
    fs.fsyncSync(fd)
    fs.closeSync(fd)
    fs.renameSync(temp, target)
    res.setHeader("content-type", "application/json")
    res.end(JSON.stringify({ size, sha256: hash.digest("hex") }))
  })
})
server.listen(Number(process.env.BENCH_PORT), "127.0.0.1")
