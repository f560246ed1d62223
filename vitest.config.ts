import { availableParallelism } from "node:os"
import { fileURLToPath } from "node:url"
import { configDefaults, defineConfig } from "vitest/config"

/**
 * Under `npm run test:pg` (KEEL_TEST_DATABASE_URL set) the suite runs again with every test layer and Keel child on
 * PostgreSQL. The files that choose PostgreSQL themselves (`*-pg.test.ts`, `pg-*.test.ts`) already ran on it in the
 * plain run, the same way: they are not run a second time (docs/database.md, "Tests on both engines").
 */
const onPostgres = (process.env.KEEL_TEST_DATABASE_URL ?? "") !== ""

export default defineConfig({
  resolve: {
    // In-process tests import the library from source (most import test/support/keel.ts, the flat test barrel); test/library.test.ts checks the built entry.
    alias: {
      "keel/client": fileURLToPath(new URL("./src/http/reporter/index.ts", import.meta.url)),
      "keel/clients": fileURLToPath(new URL("./src/clients.ts", import.meta.url)),
      "keel/fleet": fileURLToPath(new URL("./src/services/fleet/index.ts", import.meta.url)),
      "keel/groundtruth": fileURLToPath(new URL("./src/services/groundtruth/index.ts", import.meta.url)),
      "keel/layers": fileURLToPath(new URL("./src/layers/index.ts", import.meta.url)),
      "keel/market": fileURLToPath(new URL("./src/services/market/index.ts", import.meta.url)),
      "keel/product": fileURLToPath(new URL("./src/services/product/index.ts", import.meta.url)),
      keel: fileURLToPath(new URL("./src/index.ts", import.meta.url))
    }
  },
  test: {
    include: ["test/**/*.test.ts"],
    // The dashboard's browser tests (test/ui) run a `ctl serve` of their own on SQLite: nothing to run again.
    exclude: [
      ...configDefaults.exclude,
      ...(onPostgres ? ["test/**/*-pg.test.ts", "test/**/pg-*.test.ts", "test/ui/**"] : [])
    ],
    // A worker evaluates the library's module graph once for all its files instead of once per file: on this
    // 2-core machine collecting the files cost about as much CPU as running them (185 s of 391 s for the
    // domain files). What must not leak between files is reset in the setup file; README ("Development") says the rules.
    isolate: false,
    setupFiles: ["test/support/vitest-setup.ts"],
    // vitest's default is one worker per core less one: a single worker on the 2-core CI machine, idle while its
    // process tests wait on children. One per core keeps both busy.
    maxWorkers: Math.max(2, availableParallelism()),
    // Bounds on a hang, not timing claims: a loaded 2-core machine runs the process tests 5-10x slower (issue 42).
    testTimeout: 120_000,
    hookTimeout: 120_000
  }
})
