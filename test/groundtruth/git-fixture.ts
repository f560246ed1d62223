import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const env = {
  ...process.env,
  GIT_AUTHOR_NAME: "Keel Test",
  GIT_AUTHOR_EMAIL: "test@keel.invalid",
  GIT_COMMITTER_NAME: "Keel Test",
  GIT_COMMITTER_EMAIL: "test@keel.invalid",
  GIT_CONFIG_NOSYSTEM: "1",
  HOME: os.tmpdir()
}

export const git = (dir: string, ...args: Array<string>) => gitRaw(dir, ...args).trim()

/** Output as git printed it (no trimming), for comparing file contents. */
export const gitRaw = (dir: string, ...args: Array<string>) =>
  execFileSync("git", ["-C", dir, ...args], { env, encoding: "utf8" })

/** A real repository: files written, added and committed; answers the new commit. */
export const commitFiles = (dir: string, files: Record<string, string | Buffer | null>, message: string) => {
  for (const [file, content] of Object.entries(files)) {
    const full = path.join(dir, file)
    if (content === null) {
      fs.rmSync(full, { force: true })
      continue
    }
    fs.mkdirSync(path.dirname(full), { recursive: true })
    fs.writeFileSync(full, content)
  }
  git(dir, "add", "-A")
  git(dir, "commit", "-q", "-m", message)
  return git(dir, "rev-parse", "HEAD")
}

export const initRepo = (root: string, name: string) => {
  const dir = path.join(root, name)
  fs.mkdirSync(dir, { recursive: true })
  git(dir, "init", "-q", "-b", "main")
  return dir
}

export const README = `# Fastify docs

Fastify is a web framework focused on speed.

## Install

Run npm install fastify to add it.
Node 20 or later is required.

## Routes

Declare a route with fastify.get and a handler.
Handlers may return a value or a promise.

### Hooks

The onRequest hook runs first; preHandler runs before the handler.
`

/** The docs repo: markdown with headings, a root-only config file, excluded tests, a binary, a symlink, a large file. */
export const buildCorpus = () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "keel-gt-"))
  const docs = initRepo(root, "fastify")
  const first = commitFiles(
    docs,
    {
      "README.md": README,
      "docs/guide/plugins.md":
        "# Plugins\n\nA plugin is registered with fastify.register.\n\nEncapsulation keeps plugins apart.\n",
      "docs/removed.md": "# Legacy\n\nThe legacy decorator API is gone.\n",
      "docs/old-name.md": "# Renamed page\n\nThis page talks about serialization schemas.\n",
      "package.json": `{\n  "name": "fastify",\n  "version": "5.0.0"\n}\n`,
      "lib/package.json": `{ "name": "nested-not-selected" }\n`,
      "test/routes.md": "# Test notes\n\nshould never be indexed\n",
      ".hidden.md": "# Hidden\n\ndotfiles are not matched by *\n",
      "docs/logo.png": Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0x0d, 1, 2, 3]),
      "docs/export.md": Buffer.concat([Buffer.from("# Exported\n"), Buffer.from([0, 1, 2, 0, 3])]),
      "docs/huge.md": `# Huge\n\n${"word ".repeat(2000)}\n`
    },
    "initial docs"
  )
  fs.symlinkSync("README.md", path.join(docs, "docs", "link.md"))
  const second = commitFiles(docs, {}, "add a symlink")
  const registry = initRepo(root, "registry")
  const sources = (extra = "") => `version: 1
defaults:
  branch: main
  include: ['**/*.md']
  exclude: ['**/node_modules/**']
sources:
  - name: fastify
    description: The web framework's guides and reference
    url: ../fastify
    owner: web-platform-team
    trust: canonical
    include: ['**/*.md', 'package.json']
    exclude: ['test/**']
  - name: call-transcripts
    url: ../fastify
    kind: transcript
${extra}`
  commitFiles(registry, { "sources.yml": sources() }, "registry")
  return { root, docs, registry, sources, commits: [first, second] }
}
