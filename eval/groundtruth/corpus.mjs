// The evaluation's material, shared by run.mjs and fit-abstention.mjs: the committed snapshot of six real
// repositories (eval/groundtruth/corpus) made into real git repositories in a temporary directory, a
// registry naming them, and the questions (eval/groundtruth/questions/*.json, each with its repository).
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const here = path.dirname(fileURLToPath(import.meta.url))
export const corpus = path.join(here, "corpus")

// Trust tiers differ on purpose: ranking must not let the canonical tier outrank the source a question is about.
const TRUST = {
  fastify: "canonical",
  vite: "canonical",
  axios: "reference",
  prettier: "reference",
  express: "community",
  ripgrep: "reference"
}

export const repos = fs
  .readdirSync(corpus, { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name)
  .sort()

export const filesOf = (dir) =>
  fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))

export const questions = fs
  .readdirSync(path.join(here, "questions"))
  .filter((f) => f.endsWith(".json"))
  .sort()
  .flatMap((f) => {
    const repo = f.replace(/\.json$/, "")
    return JSON.parse(fs.readFileSync(path.join(here, "questions", f), "utf8")).map((q) => ({ ...q, repo }))
  })

/**
 * A temporary directory holding each repository of the snapshot as a git repository and a registry
 * repository whose sources.yml lists them; returns its path and the registry's.
 */
export const buildWorkspace = () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "keel-eval-gt-"))
  const gitEnv = {
    PATH: process.env.PATH,
    HOME: work,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_AUTHOR_NAME: "eval",
    GIT_AUTHOR_EMAIL: "eval@keel.invalid",
    GIT_COMMITTER_NAME: "eval",
    GIT_COMMITTER_EMAIL: "eval@keel.invalid",
    GIT_AUTHOR_DATE: "2026-01-01T00:00:00Z",
    GIT_COMMITTER_DATE: "2026-01-01T00:00:00Z"
  }
  const git = (cwd, ...args) => execFileSync("git", ["-C", cwd, ...args], { env: gitEnv, stdio: "ignore" })
  for (const name of repos) {
    const dir = path.join(work, "repos", name)
    fs.cpSync(path.join(corpus, name), dir, { recursive: true })
    git(dir, "init", "-q", "-b", "main")
    git(dir, "add", "-A")
    git(dir, "commit", "-q", "-m", `snapshot of ${name}`)
  }
  const registry = path.join(work, "registry")
  fs.mkdirSync(registry, { recursive: true })
  fs.writeFileSync(
    path.join(registry, "sources.yml"),
    `${[
      "version: 1",
      "defaults:",
      "  include: ['**/*.md', '**/*.json', '**/*.yml', '**/*.yaml', '**/*.toml', '**/*.js', '**/*.ts', '.github/workflows/*.yml']",
      "sources:",
      ...repos.map(
        (name) =>
          `  - { name: ${name}, url: ${JSON.stringify(path.join(work, "repos", name))}, trust: ${TRUST[name] ?? "reference"} }`
      )
    ].join("\n")}\n`
  )
  git(registry, "init", "-q", "-b", "main")
  git(registry, "add", "-A")
  git(registry, "commit", "-q", "-m", "registry")
  return { work, registry }
}

/** The library pointed at the workspace (lexical only unless the environment configures an embedder). */
export const importKeel = async ({ work, registry }) => {
  Object.assign(process.env, {
    KEEL_DATA_DIR: path.join(work, "data"),
    GT_REGISTRY_REPO: registry,
    KEEL_LOG_LEVEL: process.env.KEEL_LOG_LEVEL ?? "error",
    KEEL_DEMO_DATA: "false"
  })
  // The eval reads the ground truth's services and the abstention model's feature names (an internal, so from dist).
  const { GroundTruth, Layers } = await import("keel")
  const { ABSTENTION_FEATURES } = await import("../../dist/src/services/groundtruth/Abstention.js")
  return { ...GroundTruth, ServicesLive: Layers.ServicesLive, ABSTENTION_FEATURES }
}
