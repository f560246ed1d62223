// The ground-truth benches' corpus: >= BENCH_CHUNKS (100,000) chunks built from real Markdown (the READMEs
// and docs under node_modules and docs/), copies of them committed to a real git repository, with a
// registry naming it as the one source; and two-word queries drawn from the same text.
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { chunkFile } from "keel/groundtruth"

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)))
const gitEnv = {
  ...process.env,
  GIT_AUTHOR_NAME: "bench",
  GIT_AUTHOR_EMAIL: "b@x",
  GIT_COMMITTER_NAME: "bench",
  GIT_COMMITTER_EMAIL: "b@x"
}
const git = (cwd, ...args) =>
  execFileSync("git", ["-C", cwd, ...args], { env: gitEnv, stdio: "ignore", maxBuffer: 1 << 30 })

const markdownUnder = (dir) =>
  fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(".md"))
    .map((e) => path.join(e.parentPath ?? e.path, e.name))

/** Writes the corpus and its registry under `work`; answers where they are and what they hold. */
export const buildCorpus = (work, { targetChunks, queryCount }) => {
  const corpus = path.join(work, "corpus")
  const registry = path.join(work, "registry")
  const sources = [...markdownUnder(path.join(root, "node_modules")), ...markdownUnder(path.join(root, "docs"))]
    .map((file) => ({
      name: path.relative(root, file).replace(/[^A-Za-z0-9.]+/g, "-"),
      text: fs.readFileSync(file, "utf8")
    }))
    .filter((s) => s.text.length > 500)
  const options = { maxLines: 40, overlapLines: 5 }
  let chunks = 0
  let files = 0
  for (let copy = 0; chunks < targetChunks; copy++) {
    const dir = path.join(corpus, `copy-${String(copy).padStart(3, "0")}`)
    fs.mkdirSync(dir, { recursive: true })
    for (const source of sources) {
      const text = `# Copy ${copy} of ${source.name}\n\n${source.text}`
      fs.writeFileSync(path.join(dir, source.name), text)
      chunks += chunkFile(source.name, text, options).length
      files++
    }
  }
  git(corpus, "init", "-q", "-b", "main")
  git(corpus, "add", "-A")
  git(corpus, "commit", "-q", "-m", "corpus")
  fs.mkdirSync(registry)
  fs.writeFileSync(
    path.join(registry, "sources.yml"),
    `version: 1\nsources:\n  - name: corpus\n    url: ${JSON.stringify(corpus)}\n    trust: canonical\n    include: ['**/*.md']\n`
  )
  git(registry, "init", "-q", "-b", "main")
  git(registry, "add", "-A")
  git(registry, "commit", "-q", "-m", "registry")

  // Queries: pairs of words drawn from the corpus itself.
  const words = [...new Set(sources.flatMap((s) => s.text.toLowerCase().match(/[a-z]{5,12}/g) ?? []))]
  let seed = 7
  const pick = () => {
    seed = (seed * 48271) % 2147483647
    return words[seed % words.length]
  }
  const queries = Array.from({ length: queryCount }, () => `${pick()} ${pick()}`)
  return { corpus, registry, files, chunks, documents: sources.length, queries }
}

/** Sequential `GET /search` against a Keel server on `port`, one keep-alive connection: each answer's latency (ms). */
export const searcher = (port) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const search = (q, limit = 10) =>
    new Promise((resolve, reject) => {
      const t = process.hrtime.bigint()
      http
        .get({ host: "127.0.0.1", port, path: `/search?q=${encodeURIComponent(q)}&limit=${limit}`, agent }, (res) => {
          res.resume()
          res.on("end", () =>
            res.statusCode === 200
              ? resolve(Number(process.hrtime.bigint() - t) / 1e6)
              : reject(new Error(`/search answered ${res.statusCode}`))
          )
        })
        .on("error", reject)
    })
  return { search, close: () => agent.destroy() }
}
