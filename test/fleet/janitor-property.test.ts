import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, FastCheck as fc, Layer, Logger, LogLevel } from "effect"
import {
  AppConfigTest,
  CACHEDIR_SIGNATURE,
  type CleanupReport,
  DiskMeter,
  FleetRegistry,
  Janitor,
  JobQueue,
  MemoryObjectStoreLayer,
  ObjectGateway,
  SqlTest
} from "../support/keel.js"

/**
 * The disk janitor's one promise, "delete only what is provably eligible", as a property over random
 * trees and a concurrent mutator: an enforce pass to target (the meter never reports the target free)
 * runs over a build root holding eligible, young, wrongly signed and untagged directories, protected
 * roots (the declared huggingface_cache root, the janitor's state dir) under, over and beside tagged
 * directories, links out of the tree and back into it, and a root declared through a link. Between
 * candidates, the mutator swaps random directories (often the parents of later candidates) for links to
 * outside directories full of old tagged caches. A manifest of every entry under the temp dir, taken
 * before and after, may differ only inside directories this test itself proves eligible, or where the
 * mutator itself changed the tree.
 */

const GIB = 1024 ** 3
const DAY = 86_400_000
const OLD = () => new Date(Date.now() - 10 * DAY)

const within = (child: string, parent: string) => child === parent || child.startsWith(`${parent}${path.sep}`)

// ---------------------------------------------------------------------------------------------------
// The janitor, built as janitor.test.ts builds it (its data dir outside the tree under test).

const scriptedMeter = (free: () => number) => Layer.succeed(DiskMeter, { available: () => Effect.sync(free) })

const JanitorTest = (env: Record<string, string>, meter: Layer.Layer<DiskMeter>, dataDir: string) =>
  Janitor.Default.pipe(
    Layer.provide(meter),
    Layer.provideMerge(JobQueue.Default),
    Layer.provideMerge(FleetRegistry.Default),
    Layer.provideMerge(ObjectGateway.Default),
    Layer.provideMerge(MemoryObjectStoreLayer),
    Layer.provideMerge(SqlTest),
    Layer.provideMerge(AppConfigTest({ dataDir })),
    Layer.provide(
      Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries({ KEEL_HOST: "jan", ...env }))))
    )
  )

const registryWith = (dir: string, host: string, policy: Record<string, unknown>) => {
  const file = path.join(dir, "registry.yml")
  const body = { version: 1, targets: [{ name: host, os: "linux", channel: "local", disk_cleanup: policy }] }
  fs.writeFileSync(file, JSON.stringify(body)) // JSON is YAML
  return file
}

// ---------------------------------------------------------------------------------------------------
// Manifests: every entry under a directory, never following a link.

interface Entry {
  readonly type: "file" | "dir" | "link" | "other"
  readonly size: number
  readonly mtime: number
  readonly uid: number
  readonly mode: number
  readonly target: string | null
  readonly sha256: string | null
}

const entryOf = (file: string, stat: fs.Stats): Entry => ({
  type: stat.isSymbolicLink() ? "link" : stat.isDirectory() ? "dir" : stat.isFile() ? "file" : "other",
  size: stat.size,
  mtime: stat.mtimeMs,
  uid: stat.uid,
  mode: stat.mode,
  target: stat.isSymbolicLink() ? fs.readlinkSync(file) : null,
  sha256: stat.isFile() ? createHash("sha256").update(fs.readFileSync(file)).digest("hex") : null
})

/** Absolute path → entry, for `top` and everything under it. */
const manifest = (top: string): Map<string, Entry> => {
  const out = new Map<string, Entry>()
  const stack = [top]
  while (stack.length > 0) {
    const current = stack.pop()!
    const stat = fs.lstatSync(current, { throwIfNoEntry: false })
    if (stat === undefined) continue
    out.set(current, entryOf(current, stat))
    if (stat.isDirectory()) for (const name of fs.readdirSync(current)) stack.push(path.join(current, name))
  }
  return out
}

const same = (a: Entry | undefined, b: Entry | undefined) =>
  a !== undefined &&
  b !== undefined &&
  a.type === b.type &&
  a.size === b.size &&
  a.mtime === b.mtime &&
  a.uid === b.uid &&
  a.mode === b.mode &&
  a.target === b.target &&
  a.sha256 === b.sha256

/** Only a directory's own bookkeeping changed (an entry added to it or removed from it). */
const onlyDirMeta = (a: Entry | undefined, b: Entry | undefined) =>
  a?.type === "dir" && b?.type === "dir" && a.uid === b.uid && a.mode === b.mode

// ---------------------------------------------------------------------------------------------------
// Random trees.

type Kind = "eligible" | "young" | "wrongSig" | "untagged" | "linkOut" | "linkBack" | "hub" | "state"

interface ItemSpec {
  readonly kind: Kind
  /** Which existing directory is the parent (modulo the directories so far). */
  readonly parent: number
  /** Hub and state: whether they carry a signed, old tag themselves; for hub/state also "inside a cache". */
  readonly tagged: boolean
  /** linkOut: which outside dir; linkBack: which tree dir; hub/state: even = prefer an eligible parent. */
  readonly pick: number
}

interface MutationSpec {
  /** Fires after this many candidates were handled (0 = after the first). */
  readonly after: number
  readonly victim: number
  readonly preferAncestor: boolean
  readonly outside: number
}

interface Spec {
  readonly items: ReadonlyArray<ItemSpec>
  readonly linkRoot: boolean
  readonly outsideTagged: ReadonlyArray<boolean>
  readonly mutations: ReadonlyArray<MutationSpec>
}

const specArb: fc.Arbitrary<Spec> = fc.record({
  items: fc.array(
    fc.record({
      kind: fc.oneof(
        { arbitrary: fc.constant<Kind>("eligible"), weight: 4 },
        { arbitrary: fc.constant<Kind>("young"), weight: 1 },
        { arbitrary: fc.constant<Kind>("wrongSig"), weight: 1 },
        { arbitrary: fc.constant<Kind>("untagged"), weight: 2 },
        { arbitrary: fc.constant<Kind>("linkOut"), weight: 2 },
        { arbitrary: fc.constant<Kind>("linkBack"), weight: 1 },
        { arbitrary: fc.constant<Kind>("hub"), weight: 1 },
        { arbitrary: fc.constant<Kind>("state"), weight: 1 }
      ),
      parent: fc.nat({ max: 20 }),
      tagged: fc.boolean(),
      pick: fc.nat({ max: 20 })
    }),
    { minLength: 1, maxLength: 13 }
  ),
  linkRoot: fc.boolean(),
  outsideTagged: fc.array(fc.boolean(), { minLength: 1, maxLength: 2 }),
  mutations: fc.array(
    fc.record({
      after: fc.nat({ max: 3 }),
      victim: fc.nat({ max: 20 }),
      preferAncestor: fc.boolean(),
      outside: fc.nat({ max: 3 })
    }),
    { maxLength: 4 }
  )
})

interface Node {
  readonly path: string
  readonly kind: Kind | "root"
  /** A signed CACHEDIR.TAG and an old mtime. */
  readonly signedOld: boolean
  readonly children: Array<Node>
}

interface Built {
  readonly base: string
  readonly realRoot: string
  readonly declaredRoot: string
  readonly hub: string
  readonly hubDeclared: string
  readonly state: string
  readonly stateDeclared: string
  readonly outsides: ReadonlyArray<string>
  readonly moved: string
  readonly nodes: ReadonlyArray<Node>
}

const tagged = (dir: string, signature = CACHEDIR_SIGNATURE) => {
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(dir, "CACHEDIR.TAG"), `${signature}\n# generated\n`)
  fs.writeFileSync(path.join(dir, "payload.bin"), Buffer.alloc(512, 7))
}

const plain = (dir: string, file: string) => {
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(dir, file), `${file} in ${path.basename(dir)}\n`)
}

const buildTree = (spec: Spec): Built => {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "keel-jprop-")))
  const realRoot = path.join(base, "build")
  const linkRoot = path.join(base, "build-link")
  fs.mkdirSync(realRoot)
  if (spec.linkRoot) fs.symlinkSync(realRoot, linkRoot)
  const moved = path.join(base, "moved")
  fs.mkdirSync(moved)
  const old: Array<string> = []

  // Outside the build root: directories holding old tagged caches (some tagged themselves).
  const outsides = spec.outsideTagged.map((selfTagged, k) => {
    const dir = path.join(base, "outside", `o${k}`)
    tagged(path.join(dir, "c"))
    old.push(path.join(dir, "c"))
    plain(dir, "plain.txt")
    if (selfTagged) {
      tagged(dir)
      old.push(dir)
    }
    return dir
  })

  const root: Node = { path: realRoot, kind: "root", signedOld: false, children: [] }
  const nodes: Array<Node> = [root]
  let hub: string | undefined
  let state: string | undefined
  spec.items.forEach((item, i) => {
    let kind = item.kind
    if ((kind === "hub" && hub !== undefined) || (kind === "state" && state !== undefined)) kind = "untagged"
    const preferred =
      (kind === "hub" || kind === "state") && item.pick % 2 === 0 ? nodes.filter((n) => n.kind === "eligible") : []
    const parent =
      preferred.length > 0 ? preferred[item.parent % preferred.length]! : nodes[item.parent % nodes.length]!
    const where = path.join(parent.path, `${kind}-${i}`)
    if (kind === "linkOut") {
      fs.symlinkSync(outsides[item.pick % outsides.length]!, where)
      return
    }
    if (kind === "linkBack") {
      fs.symlinkSync(nodes[item.pick % nodes.length]!.path, where)
      return
    }
    let signedOld = false
    if (kind === "eligible") {
      tagged(where)
      signedOld = true
    } else if (kind === "young") tagged(where)
    else if (kind === "wrongSig") tagged(where, "Signature: 0000000000000000000000000000000")
    else if (kind === "untagged") plain(where, "notes.txt")
    else {
      plain(where, kind === "hub" ? "config.json" : "keep.txt")
      if (item.tagged) tagged(where)
      signedOld = item.tagged
      if (kind === "hub") hub = where
      else state = where
    }
    if (kind !== "young") old.push(where)
    const node: Node = { path: where, kind, signedOld, children: [] }
    parent.children.push(node)
    nodes.push(node)
  })
  if (hub === undefined) {
    hub = path.join(base, "hub")
    plain(hub, "config.json")
  }
  if (state === undefined) {
    state = path.join(base, "state")
    plain(state, "keep.txt")
  }
  // Ages last: adding entries to a directory makes it young again.
  for (const dir of old) fs.utimesSync(dir, OLD(), OLD())
  const spelled = (p: string) =>
    spec.linkRoot && within(p, realRoot) ? path.join(linkRoot, path.relative(realRoot, p)) : p
  return {
    base,
    realRoot,
    declaredRoot: spec.linkRoot ? linkRoot : realRoot,
    hub,
    hubDeclared: spelled(hub),
    state,
    stateDeclared: spelled(state),
    outsides,
    moved,
    nodes
  }
}

/**
 * What the janitor may delete, computed from the tree as built: the walk of rule 1 and rule 2. A
 * directory with a signed tag and an old mtime, reached from the root without a link, neither a
 * protected path nor containing one, and not inside another candidate (a candidate is not descended
 * into); a protected directory is not walked into.
 */
const eligibleSet = (built: Built): Set<string> => {
  const protectedPaths = [built.hub, built.state]
  const eligible = new Set<string>()
  const walk = (node: Node) => {
    if (protectedPaths.includes(node.path)) return
    if (node.kind !== "root" && node.signedOld) {
      if (protectedPaths.some((p) => within(p, node.path))) return
      eligible.add(node.path)
      return
    }
    for (const child of node.children) walk(child)
  }
  walk(built.nodes[0]!)
  return eligible
}

// ---------------------------------------------------------------------------------------------------
// The mutator: swaps a directory of the tree for a link to an outside directory between candidates.

interface Move {
  readonly from: string
  readonly to: string
  readonly target: string
  /** The moved tree right after the move: nothing may touch it afterwards (it is outside the root). */
  readonly snapshot: Map<string, Entry>
}

const isRealDir = (p: string) => {
  try {
    return fs.realpathSync(p) === p && fs.lstatSync(p).isDirectory()
  } catch {
    return false
  }
}

const mutator = (built: Built, eligible: ReadonlySet<string>, mutations: ReadonlyArray<MutationSpec>) => {
  const moves: Array<Move> = []
  let handled = 0
  const afterCandidate = () => {
    const index = handled++
    for (const mutation of mutations) {
      if (mutation.after !== index) continue
      // Never the state dir or a directory above it: the janitor writes its state there by path.
      const all = built.nodes
        .map((n) => n.path)
        .filter((p) => !within(built.state, p) && isRealDir(p))
        .sort()
      const ancestors = all.filter((p) => [...eligible].some((e) => within(e, p) && isRealDir(e)))
      const pool = mutation.preferAncestor && ancestors.length > 0 ? ancestors : all
      if (pool.length === 0) continue
      const from = pool[mutation.victim % pool.length]!
      const to = path.join(built.moved, `m${moves.length}`)
      const target = built.outsides[mutation.outside % built.outsides.length]!
      fs.renameSync(from, to)
      fs.symlinkSync(target, from)
      moves.push({ from, to, target, snapshot: manifest(to) })
    }
  }
  return { moves, afterCandidate }
}

// ---------------------------------------------------------------------------------------------------
// The property.

const JANITOR_FILES = /^(state\.json|janitor\.lock|janitor\.lock\.retired)(\.tmp-\d+)?$/
const BAD_OUTCOMES = ["invalid_or_unavailable_policy", "lock_busy", "blocked_running_jobs", "lock_recovery_report_only"]

const stats = { runs: 0, deleted: 0, mutations: 0, refusals: 0 }

const runPass = (built: Built, aux: string, afterCandidate: () => void) => {
  const policy = {
    mode: "enforce",
    check_interval_seconds: 3600,
    low_free_gb: 50,
    target_free_gb: 100,
    max_items_per_pass: 100,
    max_bytes_per_pass: 10 * GIB,
    max_scan_items: 200_000,
    cleaners: {
      build_caches: { min_age_seconds: DAY / 1000, root: built.declaredRoot },
      huggingface_cache: { min_age_seconds: DAY / 1000, root: built.hubDeclared }
    }
  }
  const dataDir = path.join(aux, "data")
  fs.mkdirSync(dataDir)
  return Effect.runPromise(
    Effect.flatMap(Janitor, (janitor) => janitor.pass({ writer: "watch", toTarget: true, afterCandidate })).pipe(
      Effect.provide(
        JanitorTest(
          { KEEL_REGISTRY: registryWith(aux, "jan", policy), KEEL_JANITOR_STATE_DIR: built.stateDeclared },
          scriptedMeter(() => 0),
          dataDir
        )
      ),
      Logger.withMinimumLogLevel(LogLevel.Warning)
    )
  )
}

/** Everything that went wrong in one run (empty when the promise held). */
const violations = (
  built: Built,
  eligible: ReadonlySet<string>,
  before: Map<string, Entry>,
  afterRaw: Map<string, Entry>,
  moves: ReadonlyArray<Move>,
  report: CleanupReport
): Array<string> => {
  const problems: Array<string> = []
  const rel = (p: string) => path.relative(built.base, p)
  if (BAD_OUTCOMES.includes(report.outcome)) problems.push(`outcome ${report.outcome}: ${report.detail}`)
  for (const d of report.deleted)
    if (!eligible.has(d.path)) problems.push(`report.deleted names ${rel(d.path)}, which is not eligible`)

  // The after manifest in the tree's original coordinates: moved trees mapped back to where they were,
  // the mutator's own links dropped.
  const linkAt = new Map(moves.map((m) => [m.from, m.target]))
  const after = new Map<string, Entry>()
  for (const [p, entry] of afterRaw) {
    if (p === built.moved) continue
    const move = moves.find((m) => within(p, m.to))
    const original = move === undefined ? p : path.join(move.from, path.relative(move.to, p))
    if (entry.type === "link" && linkAt.has(original) && entry.target === linkAt.get(original)) continue
    after.set(original, entry)
  }
  before.delete(built.moved)

  const changed = new Set<string>()
  for (const p of new Set([...before.keys(), ...after.keys()])) if (!same(before.get(p), after.get(p))) changed.add(p)
  const victims = new Set(moves.map((m) => m.from))
  const victimParents = new Set(moves.map((m) => path.dirname(m.from)))
  const insideEligible = (p: string) => [...eligible].some((e) => within(p, e))
  for (const p of changed) {
    if (insideEligible(p)) continue
    if (path.dirname(p) === built.state && JANITOR_FILES.test(path.basename(p))) continue
    const a = before.get(p)
    const b = after.get(p)
    if (onlyDirMeta(a, b)) {
      const childChanged = [...changed].some((c) => path.dirname(c) === p)
      if (childChanged || victims.has(p) || victimParents.has(p) || p === built.state) continue
    }
    problems.push(
      `${rel(p)} changed: before ${a === undefined ? "absent" : `${a.type} ${a.size}B ${a.target ?? ""}`}, after ${
        b === undefined ? "absent" : `${b.type} ${b.size}B ${b.target ?? ""}`
      }`
    )
  }
  // A moved tree is outside the root from the moment it moved: nothing may touch it after that.
  for (const move of moves) {
    const now = manifest(move.to)
    for (const p of new Set([...move.snapshot.keys(), ...now.keys()]))
      if (!same(move.snapshot.get(p), now.get(p))) problems.push(`moved tree ${rel(p)} changed after the move`)
  }
  return problems
}

/** One run: build the tree, pass with the mutator, compare manifests; throws with the details on a violation. */
const check = async (spec: Spec) => {
  const built = buildTree(spec)
  const aux = fs.mkdtempSync(path.join(os.tmpdir(), "keel-jprop-aux-"))
  const rel = (p: string) => path.relative(built.base, p)
  try {
    const eligible = eligibleSet(built)
    const mutate = mutator(built, eligible, spec.mutations)
    const before = manifest(built.base)
    const report = await runPass(built, aux, mutate.afterCandidate)
    const after = manifest(built.base)
    const problems = violations(built, eligible, before, after, mutate.moves, report)
    // With no mutation the pass is also complete: every eligible directory is gone (the test is not vacuous).
    if (mutate.moves.length === 0)
      for (const e of eligible)
        if (fs.lstatSync(e, { throwIfNoEntry: false }) !== undefined) problems.push(`eligible ${rel(e)} was kept`)
    stats.runs += 1
    stats.deleted += report.deleted.length
    stats.mutations += mutate.moves.length
    stats.refusals += report.errors.length
    if (problems.length > 0)
      throw new Error(
        [
          ...problems,
          `eligible: ${JSON.stringify([...eligible].map(rel))}`,
          `hub: ${rel(built.hub)}, state: ${rel(built.state)}, root declared: ${rel(built.declaredRoot)}`,
          `moves: ${JSON.stringify(mutate.moves.map((m) => `${rel(m.from)} -> link to ${rel(m.target)}`))}`,
          `deleted: ${JSON.stringify(report.deleted.map((d) => rel(d.path)))}`,
          `errors: ${JSON.stringify(report.errors.map((e) => `${rel(e.path)}: ${e.error}`))}`
        ].join("\n")
      )
  } finally {
    fs.rmSync(built.base, { recursive: true, force: true })
    fs.rmSync(aux, { recursive: true, force: true })
  }
}

const item = (kind: Kind, parent = 0, tagged = false): ItemSpec => ({ kind, parent, tagged, pick: 1 })

describe("janitor property: delete only what is provably eligible", () => {
  it("random trees, protected roots, links and a concurrent mutator: only eligible directories change", async () => {
    stats.runs = stats.deleted = stats.mutations = stats.refusals = 0
    await fc.assert(fc.asyncProperty(specArb, check), { numRuns: 30 })
    // Not vacuous: passes deleted things, and the mutator swapped directories under them.
    if (stats.deleted === 0 || stats.mutations === 0) throw new Error(`vacuous: ${JSON.stringify(stats)}`)
  }, 60_000)

  // The property's shrunk counterexamples, kept as fixed cases: a tagged cache INSIDE a protected root
  // that lives under the build root (build/hub-0/eligible-1, build/state-0/eligible-1).
  it("a tagged cache inside the declared huggingface_cache root under the build root is kept", async () => {
    await check({
      items: [item("hub"), item("eligible", 1)],
      linkRoot: false,
      outsideTagged: [false],
      mutations: []
    })
  }, 20_000)

  it("a tagged cache inside KEEL_JANITOR_STATE_DIR under the build root is kept", async () => {
    await check({
      items: [item("state"), item("eligible", 1)],
      linkRoot: false,
      outsideTagged: [false],
      mutations: []
    })
  }, 20_000)
})
