// The architecture gate CI runs (.ci/run):
//   node scripts/architecture-check.mjs [--root DIR] [--max-own-lines N] [--allow-arrow FROM->TO]...
//
// An arrow still being removed can be let through by name, `--allow-arrow FROM->TO` (files relative to the root), with
// its reason where the flag is given; the check fails when an allowed arrow no longer exists, so none goes stale.
//
// Reads every .ts file under <root>/src with the project's own TypeScript (its sync API, through <root>/tsconfig.json)
// and prints the five longest functions by their own lines, every import that runs up a layer, and every import
// cycle. Exits 1 on an upward arrow or a cycle. Functions over 80 own lines are reported; with --max-own-lines N,
// one over N lines fails the check too.
//
// Own lines: a function's span minus the spans of the named functions nested in it (anonymous callbacks count
// toward their parent), so an Effect.Service constructor is not one giant function.
//
// Layers, lowest first; an import may only point at its own layer or a lower one:
//   contracts   src/contracts/**, src/clients.ts: wire schemas, errors, HttpApi definitions, the typed clients.
//               They import nothing of Keel but other contracts, so anything may import them.
//   platform    src/services/platform/**: database, objects, vault, host channel, process, clock.
//   fleet-shared src/services/fleet/shared/**: the fleet's model and the ports both of its programs use.
//   fleet-agent src/services/fleet/agent/**: the host agent; it imports nothing of the control plane.
//   services    src/services/<domain>/** (market, product, groundtruth, and fleet/control/: the control plane).
//   actors      src/actors/**: cluster entities and workflows (thin: they call services).
//   http        src/http/**: handlers, middleware, fast paths.
//   layers      src/layers/**: composition only.
//   cli         src/cli/**: the `ctl` command tree.
//   entry       src/index.ts and anything else at the top of src/.
//
// The fleet's two programs meet only through fleet-shared (the host protocol's ports): a file under
// src/services/fleet/control/ may not import src/services/fleet/agent/, nor the other way round, whatever the layers
// allow. Those imports are a section of their own and fail the check like an upward one (`--allow-arrow` lets one
// through by name, as above). The control plane runs this host's agent through the ports, its adapters chosen in
// src/layers/.
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const LAYERS = [
  "contracts",
  "platform",
  "fleet-shared",
  "fleet-agent",
  "services",
  "actors",
  "http",
  "layers",
  "cli",
  "entry"
]
const DEFAULT_REPORTED_OWN_LINES = 80

export const layerOf = (file) => {
  if (file.startsWith("src/contracts/") || file === "src/clients.ts") return "contracts"
  if (file.startsWith("src/services/platform/")) return "platform"
  if (file.startsWith("src/services/fleet/shared/")) return "fleet-shared"
  if (file.startsWith("src/services/fleet/agent/")) return "fleet-agent"
  if (file.startsWith("src/services/")) return "services"
  if (file.startsWith("src/actors/")) return "actors"
  if (file.startsWith("src/http/")) return "http"
  if (file.startsWith("src/layers/")) return "layers"
  if (file.startsWith("src/cli/")) return "cli"
  return "entry"
}

const rank = (file) => LAYERS.indexOf(layerOf(file))

const PROGRAMS = [
  ["src/services/fleet/control/", "control"],
  ["src/services/fleet/agent/", "agent"]
]

/** Which of the fleet's two programs a file belongs to (control plane, host agent), undefined for neither. */
export const programOf = (file) => PROGRAMS.find(([prefix]) => file.startsWith(prefix))?.[1]

const crossesPrograms = (e) => {
  const from = programOf(e.from)
  const to = programOf(e.to)
  return from !== undefined && to !== undefined && from !== to
}

const parseArgs = (argv) => {
  const options = { root: process.cwd(), maxOwnLines: undefined, allowedArrows: [] }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    const value = () => {
      const next = argv[++i]
      if (next === undefined) throw new Error(`${arg} needs a value`)
      return next
    }
    if (arg === "--root") options.root = path.resolve(value())
    else if (arg === "--max-own-lines") {
      const n = Number(value())
      if (!Number.isInteger(n) || n < 1) throw new Error("--max-own-lines needs a positive integer")
      options.maxOwnLines = n
    } else if (arg === "--allow-arrow") {
      const arrow = value()
      if (!/^[^\s]+->[^\s]+$/.test(arrow)) throw new Error("--allow-arrow needs FROM->TO")
      options.allowedArrows.push(arrow)
    } else throw new Error(`unknown argument ${arg} (usage: [--root DIR] [--max-own-lines N] [--allow-arrow FROM->TO])`)
  }
  return options
}

/** The project's TypeScript (7: its unstable sync API), from this script's checkout. */
const typescript = async () => {
  const here = path.dirname(path.dirname(fileURLToPath(import.meta.url)))
  const load = (p) => import(pathToFileURL(path.join(here, "node_modules/typescript/dist", p)).href)
  const { API } = await load("api/sync/api.js")
  const { SyntaxKind, getTokenPosOfNode } = await load("ast/index.js")
  return { API, SyntaxKind, getTokenPosOfNode }
}

/** Functions (with their own lines) and imports (static, with whether they are type-only; dynamic) of src/. */
const read = async (root) => {
  const { API, SyntaxKind, getTokenPosOfNode } = await typescript()
  const FUNCTION = new Set([
    SyntaxKind.FunctionDeclaration,
    SyntaxKind.FunctionExpression,
    SyntaxKind.ArrowFunction,
    SyntaxKind.MethodDeclaration,
    SyntaxKind.Constructor,
    SyntaxKind.GetAccessor,
    SyntaxKind.SetAccessor
  ])
  // A function takes the name it is bound to through these wrappers: `const f = pipe(…, (x) => …)` is not `f`,
  // but `const f = Effect.fn(function* …)` and `name: (x) => …` are.
  const WRAPPER = new Set([
    SyntaxKind.CallExpression,
    SyntaxKind.ParenthesizedExpression,
    SyntaxKind.AsExpression,
    SyntaxKind.SatisfiesExpression
  ])
  const BINDING = new Set([
    SyntaxKind.VariableDeclaration,
    SyntaxKind.PropertyAssignment,
    SyntaxKind.PropertyDeclaration
  ])
  const nameOf = (node) => {
    if (node.name?.text !== undefined) return node.name.text
    for (let parent = node.parent, hops = 0; parent && hops < 6; parent = parent.parent, hops++) {
      if (BINDING.has(parent.kind)) return parent.name?.text ?? null
      if (!WRAPPER.has(parent.kind)) return null
    }
    return null
  }

  const api = new API({ cwd: root })
  try {
    const project = api.updateSnapshot({ openProject: path.join(root, "tsconfig.json") }).getProjects()[0]
    const relative = (file) => path.relative(root, file).split(path.sep).join("/")
    const files = project.program.getSourceFileNames().filter((file) => relative(file).startsWith("src/"))
    const functions = []
    const imports = []
    for (const file of files) {
      const sourceFile = project.program.getSourceFile(file)
      const from = relative(file)
      const stack = []
      const visit = (node) => {
        let entry = null
        if (FUNCTION.has(node.kind)) {
          const start = sourceFile.getLineAndCharacterOfPosition(getTokenPosOfNode(node, sourceFile)).line
          const end = sourceFile.getLineAndCharacterOfPosition(node.end).line
          const name = nameOf(node)
          const named = stack.filter((s) => s.name !== null)
          entry = {
            file: from,
            line: start + 1,
            span: end - start + 1,
            nested: 0,
            name,
            qualified: [...named.map((s) => s.name), name ?? "<anonymous>"].join(".")
          }
          const parent = named.filter((s) => !s.isClass).at(-1)
          if (name !== null && parent !== undefined) parent.nested += entry.span
          functions.push(entry)
        } else if (node.kind === SyntaxKind.ClassDeclaration && node.name) {
          entry = { name: node.name.text, isClass: true }
        } else if (
          node.kind === SyntaxKind.CallExpression &&
          node.expression?.kind === SyntaxKind.ImportKeyword &&
          node.arguments?.[0]?.kind === SyntaxKind.StringLiteral
        ) {
          imports.push({ from, specifier: node.arguments[0].text, typeOnly: false, dynamic: true })
        }
        if (entry !== null) stack.push(entry)
        node.forEachChild(visit)
        if (entry !== null) stack.pop()
      }
      sourceFile.forEachChild(visit)
      for (const statement of sourceFile.statements) {
        const isImport = statement.kind === SyntaxKind.ImportDeclaration
        if ((!isImport && statement.kind !== SyntaxKind.ExportDeclaration) || !statement.moduleSpecifier) continue
        const clause = statement.importClause
        const typeOnly = isImport ? clause?.isTypeOnly === true : statement.isTypeOnly === true
        imports.push({ from, specifier: statement.moduleSpecifier.text, typeOnly, dynamic: false })
      }
    }
    return { files: files.map(relative), functions, imports }
  } finally {
    api.close()
  }
}

const resolve = (root, from, specifier) => {
  if (!specifier.startsWith(".")) return undefined
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(from), specifier)).replace(/\.js$/, "")
  for (const candidate of [`${base}.ts`, `${base}/index.ts`]) {
    if (fs.existsSync(path.join(root, candidate))) return candidate
  }
  return undefined
}

/** Strongly connected sets of more than one file (Tarjan), each sorted. */
const cyclesOf = (graph) => {
  let counter = 0
  const index = new Map()
  const low = new Map()
  const onStack = new Set()
  const stack = []
  const found = []
  const connect = (v) => {
    index.set(v, counter)
    low.set(v, counter++)
    stack.push(v)
    onStack.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w)
        low.set(v, Math.min(low.get(v), low.get(w)))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)))
    }
    if (low.get(v) === index.get(v)) {
      const members = []
      for (let w; w !== v; ) {
        w = stack.pop()
        onStack.delete(w)
        members.push(w)
      }
      if (members.length > 1) found.push(members.sort())
    }
  }
  for (const v of graph.keys()) if (!index.has(v)) connect(v)
  return found
}

const main = async () => {
  const options = parseArgs(process.argv.slice(2))
  const { files, functions, imports } = await read(options.root)

  const named = functions
    .filter((f) => f.name !== null)
    .map((f) => ({ ...f, own: f.span - f.nested }))
    .sort((a, b) => b.own - a.own || a.file.localeCompare(b.file) || a.line - b.line)
  const limit = options.maxOwnLines ?? DEFAULT_REPORTED_OWN_LINES
  const long = named.filter((f) => f.own > limit)

  const edges = imports
    .map((i) => ({ ...i, to: resolve(options.root, i.from, i.specifier) }))
    .filter((i) => i.to !== undefined)
  // Every import counts for the layers (a type import still couples the code); a dynamic import is loaded later
  // by design (the lazy `ctl`), so it counts for the layers but cannot make a load-time cycle.
  const arrowOf = (e) => `${e.from}->${e.to}`
  const allUpward = edges.filter((e) => rank(e.to) > rank(e.from))
  const allCrossing = edges.filter(crossesPrograms)
  const isAllowed = (e) => options.allowedArrows.includes(arrowOf(e))
  const upward = allUpward.filter((e) => !isAllowed(e))
  const crossing = allCrossing.filter((e) => !isAllowed(e))
  const allowed = [...new Set([...allUpward, ...allCrossing])].filter(isAllowed)
  const stale = options.allowedArrows.filter(
    (arrow) => ![...allUpward, ...allCrossing].some((e) => arrowOf(e) === arrow)
  )
  const graph = new Map(files.map((f) => [f, new Set()]))
  for (const e of edges) if (!e.dynamic) graph.get(e.from)?.add(e.to)
  const cycles = cyclesOf(graph)

  console.log(`architecture check of ${files.length} files under src/ (${named.length} named functions)`)
  console.log("== the five longest functions (own lines, span)")
  for (const f of named.slice(0, 5)) {
    console.log(
      `${String(f.own).padStart(5)} own ${String(f.span).padStart(5)} span  ${f.qualified}  ${f.file}:${f.line}`
    )
  }
  const fatalLength = options.maxOwnLines !== undefined
  console.log(
    `== functions over ${limit} own lines: ${long.length}${fatalLength ? "" : " (reported; --max-own-lines N makes it fatal)"}`
  )
  for (const f of long) console.log(`${String(f.own).padStart(5)} own  ${f.qualified}  ${f.file}:${f.line}`)
  console.log(`== imports that run up a layer (${LAYERS.join(" < ")}): ${upward.length}`)
  for (const e of upward) {
    console.log(`${e.from} -> ${e.to}  (${layerOf(e.from)} -> ${layerOf(e.to)}${e.dynamic ? ", dynamic" : ""})`)
  }
  console.log(
    `== imports between the fleet's programs (control and agent meet only in fleet/shared): ${crossing.length}`
  )
  for (const e of crossing) {
    console.log(`${e.from} -> ${e.to}  (${programOf(e.from)} -> ${programOf(e.to)}${e.dynamic ? ", dynamic" : ""})`)
  }
  for (const e of allowed)
    console.log(`allowed for now: ${e.from} -> ${e.to}  (${layerOf(e.from)} -> ${layerOf(e.to)})`)
  for (const arrow of stale) console.log(`allowed but gone (drop its --allow-arrow): ${arrow}`)
  console.log(`== import cycles: ${cycles.length}`)
  for (const cycle of cycles) console.log(cycle.join(" <-> "))

  const failures = [
    ...(upward.length > 0 ? [`${upward.length} upward import(s)`] : []),
    ...(crossing.length > 0 ? [`${crossing.length} import(s) between control and agent`] : []),
    ...(stale.length > 0 ? [`${stale.length} stale --allow-arrow`] : []),
    ...(cycles.length > 0 ? [`${cycles.length} import cycle(s)`] : []),
    ...(fatalLength && long.length > 0 ? [`${long.length} function(s) over ${limit} own lines`] : [])
  ]
  console.log(failures.length === 0 ? "architecture check: ok" : `architecture check: FAILED (${failures.join(", ")})`)
  return failures.length === 0 ? 0 : 1
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(
    (code) => {
      process.exitCode = code
    },
    (error) => {
      console.error(`architecture check: ${error instanceof Error ? error.message : String(error)}`)
      process.exitCode = 2
    }
  )
}
