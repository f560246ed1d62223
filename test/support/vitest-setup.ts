import { afterAll, it } from "@effect/vitest"
import { childrenOnTestDatabase, cliOnPostgres, dropDataDirSchemas } from "./pg-datadir.js"

// Test files share a worker's module graph (vitest.config.ts: `isolate: false`), so the first file's
// import of the whole library is the only one a worker pays. One thing in that graph is not fit to share:
// @effect/vitest 0.30's `layer(…)` assigns its tester methods onto the module's `it` (`Object.assign(V.it, …)`),
// so after a file with `layer(HttpTest(…), { excludeTestServices: true })`, the next file's `it.effect` would run
// in that file's released runtime, without the TestClock. Fixed upstream in effect-smol #2177 (no mutation);
// until our version has it, each file starts from the methods `it` had before any file ran.
type Methods = Pick<typeof it, "effect" | "scoped" | "live" | "scopedLive" | "flakyTest" | "layer" | "prop">

const key = Symbol.for("keel/test/pristine-it")
const store = globalThis as { [key]?: Methods }
if (store[key] === undefined)
  store[key] = {
    effect: it.effect,
    scoped: it.scoped,
    live: it.live,
    scopedLive: it.scopedLive,
    flakyTest: it.flakyTest,
    layer: it.layer,
    prop: it.prop
  }
Object.assign(it, store[key])

// Under test:pg, Keel processes a test spawns (bin/ctl.js, servers) open the test database too (pg-datadir.ts).
childrenOnTestDatabase()

// Hooks a support module registers when it is first evaluated would run after the first file only. Registered
// first, so it runs after the file's own afterAll hooks (vitest runs after-hooks in reverse): its children are gone.
if (cliOnPostgres) afterAll(dropDataDirSchemas)
