// bench/janitor.mjs: the build_caches scan over a generated tree of 200,000 entries, beside
// `find ROOT -name CACHEDIR.TAG` on the same tree, in one run. Prints entries/s for both and the ratio.
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))
const { scanBuildCaches, CACHEDIR_SIGNATURE, surveyPath, mountPoints, unlimitedBudget } = await import(
  path.join(root, "dist", "src", "index.js")
)

const ENTRIES = Number(process.env.BENCH_JANITOR_ENTRIES ?? 200_000)
const FILES_PER_DIR = 9
const tree = fs.mkdtempSync(path.join(os.tmpdir(), "keel-bench-janitor-"))

// 10 files per directory (9 plus, in one directory of 50, a CACHEDIR.TAG), directories 3 levels deep.
let entries = 0
let dirs = 0
const old = new Date(Date.now() - 30 * 86_400_000)
while (entries < ENTRIES) {
  const dir = path.join(tree, `a${dirs % 20}`, `b${Math.floor(dirs / 20) % 50}`, `c${dirs}`)
  fs.mkdirSync(dir, { recursive: true })
  entries++
  for (let f = 0; f < FILES_PER_DIR && entries < ENTRIES; f++, entries++)
    fs.writeFileSync(path.join(dir, `f${f}.o`), "")
  if (dirs % 50 === 0 && entries < ENTRIES) {
    fs.writeFileSync(path.join(dir, "CACHEDIR.TAG"), `${CACHEDIR_SIGNATURE}\n`)
    entries++
  }
  fs.utimesSync(dir, old, old)
  dirs++
}
// Warm the page cache for both.
execFileSync("find", [tree, "-name", "CACHEDIR.TAG"], { stdio: "ignore" })

const time = async (run) => {
  const started = process.hrtime.bigint()
  const result = await run()
  return { ms: Number(process.hrtime.bigint() - started) / 1e6, result }
}
const find = await time(
  () => execFileSync("find", [tree, "-name", "CACHEDIR.TAG"], { encoding: "utf8" }).trim().split("\n").length
)
// The walk plus what the pass does with each candidate before it may be deleted: the survey of its tree
// (bytes, mount points, protected directories inside), as the old walk's byte count did.
const scan = await time(async () => {
  const found = await scanBuildCaches({
    root: tree,
    minAgeSeconds: 86_400,
    nowMs: Date.now(),
    uid: process.getuid(),
    refused: [],
    budget: unlimitedBudget()
  })
  const guards = { protectedIds: new Map(), mountPoints: mountPoints() }
  for (const candidate of found.candidates) surveyPath(candidate.path, guards)
  return found
})
const rate = (ms) => Math.round((entries / ms) * 1000)
console.log(`janitor scan tree: ${entries} entries, ${dirs} directories, ${find.result} CACHEDIR.TAG`)
console.log(
  `janitor build_caches scan  ${rate(scan.ms)} entries/s  ${(scan.ms / 1000).toFixed(2)} s  (${scan.result.candidates.length} candidates, ${scan.result.scanned} scanned)`
)
console.log(`find -name CACHEDIR.TAG    ${rate(find.ms)} entries/s  ${(find.ms / 1000).toFixed(2)} s`)
console.log(`janitor ratio scan/find time  ${(scan.ms / find.ms).toFixed(2)}x (target <= 2x; pass budget 30 s)`)
fs.rmSync(tree, { recursive: true, force: true })
