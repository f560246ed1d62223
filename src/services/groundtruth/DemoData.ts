import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect } from "effect"
import { childEnv } from "../platform/ChildEnv.js"
import type { DemoSeeder } from "../platform/DemoData.js"
import { packageRoot } from "../platform/Package.js"
import { GtConfig } from "./GtConfig.js"
import { Ingester } from "./Ingester.js"

/** Keel's own checkout, when its package folder is a git work tree. */
const ownRepository = () => {
  const root = packageRoot()
  return root !== undefined && fs.existsSync(path.join(root.dir, ".git")) ? root.dir : undefined
}

const git = (cwd: string, ...args: Array<string>) =>
  execFileSync("git", ["-c", "user.name=Keel", "-c", "user.email=keel@localhost", "-C", cwd, ...args], {
    stdio: "ignore",
    env: childEnv()
  })

/**
 * First start with no GT_REGISTRY_REPO: a local registry naming Keel's own repository (its README and
 * docs) is created under the data dir and ingested, so /search and /ask answer about Keel itself.
 */
export const groundTruthDemoSeeder: DemoSeeder<GtConfig | Ingester> = {
  domain: "groundtruth",
  seed: Effect.gen(function* () {
    const config = yield* GtConfig
    const own = ownRepository()
    if (!config.registryIsDefault || fs.existsSync(config.registryRepo) || own === undefined) return
    yield* Effect.sync(() => {
      fs.mkdirSync(config.registryRepo, { recursive: true })
      fs.writeFileSync(
        path.join(config.registryRepo, "sources.yml"),
        [
          "# Demo registry: Keel's own documentation (docs/groundtruth.md).",
          "version: 1",
          "sources:",
          "  - name: keel",
          `    url: ${JSON.stringify(own)}`,
          "    owner: keel",
          "    trust: canonical",
          "    include: ['README.md', 'docs/**/*.md', 'examples/**/*.md']",
          ""
        ].join("\n")
      )
      git(config.registryRepo, "init", "-q")
      git(config.registryRepo, "add", "sources.yml")
      git(config.registryRepo, "commit", "-q", "-m", "demo registry")
    })
    const result = yield* (yield* Ingester).ingest({})
    yield* Effect.logInfo("ground truth demo: Keel's own docs ingested").pipe(
      Effect.annotateLogs({ chunks: result.sources.map((s) => `${s.repo}=${s.chunks}`).join(",") })
    )
  }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("ground truth demo data not created", cause)))
}
