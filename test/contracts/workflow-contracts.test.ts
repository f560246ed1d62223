import { fileURLToPath } from "node:url"
import { build } from "esbuild"
import { assert, describe, it } from "vitest"

// Issue 43: the workflow and entity definitions are contracts below the services. Bundled for a browser, each
// reaches only effect and the definition modules of @effect/workflow, @effect/cluster and @effect/rpc — never a
// Keel service or actor, a database driver, the workflow engine or the cluster's sharding runtime.

const CONTRACTS = ["StorageHandoff", "FleetProbe", "ReleaseRun", "LeaseKeeper"]

const inputsOf = async (name: string) => {
  const entry = fileURLToPath(new URL(`../../src/contracts/fleet/${name}.ts`, import.meta.url))
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    platform: "browser",
    format: "esm",
    write: false,
    metafile: true,
    logLevel: "silent"
  })
  return Object.keys(result.metafile.inputs)
}

describe("workflow and entity contracts", () => {
  for (const name of CONTRACTS)
    it(`${name} bundles for a browser without runtime code`, async () => {
      const inputs = await inputsOf(name)
      const own = inputs.filter((i) => !i.includes("node_modules/"))
      assert.include(own, `src/contracts/fleet/${name}.ts`)
      for (const file of own) assert.match(file, /^src\/contracts\//, `${name} reaches ${file}`)
      const packages = new Set(inputs.flatMap((i) => i.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/)?.slice(1) ?? []))
      for (const p of packages)
        assert.include(
          [
            "effect",
            "fast-check",
            "pure-rand",
            "@effect/workflow",
            "@effect/cluster",
            "@effect/rpc",
            "@effect/platform",
            "msgpackr",
            "multipasta",
            "find-my-way-ts"
          ],
          p,
          `${name} reaches ${p}`
        )
      for (const runtime of ["WorkflowEngine.js", "Sharding.js", "MessageStorage.js", "SqlMessageStorage.js"])
        assert.isFalse(
          inputs.some((i) => i.endsWith(`/${runtime}`)),
          `${name} reaches ${runtime}`
        )
    }, 60_000)
})
