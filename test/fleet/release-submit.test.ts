import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, assert, describe, it } from "vitest"
import * as Yaml from "yaml"
import { dataDirMigrated, queryDataDir } from "../support/data-dir-db.js"
import { Ed25519 } from "../support/keel.js"
import { ctlBin, runCtl, startServer } from "../support/server.js"

// Issue 19, submission (seed 002, "Release submission and delivery" rules 1-3) through the binaries: `ctl release
// submit` on the control plane's host archives a clean committed tree, reserves the version, queues one build job
// on the registry builder of the recipe's platform; a `ctl machine work` worker runs it as `ctl release build` on
// that builder, which writes its outputs through the object API; the run publishes in order and signs in the
// vault. Then the crash-resume cases: the submit process SIGKILLed after each publication object and while the
// build runs — submitting again resumes the same run, nothing is rebuilt, the order holds.

const children: Array<ChildProcess> = []
afterAll(() => {
  for (const child of children) child.kill("SIGKILL")
})

const BUILD_SECRET = "s3cr3t-build-token-value"

const PUBLISHED = ["source-revision.json", "release.tar.gz", "qualification.json", "release.sig", "release.json"]

const git = (cwd: string, ...args: Array<string>) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.test", ...args], { cwd, encoding: "utf8" })

/** A product's source: the recipe, a build script that packs `tool-<version>/bin/tool` into dist/. */
const writeSource = (dir: string, buildDelaySeconds = 0, secrets: Record<string, string> = {}) => {
  fs.mkdirSync(dir, { recursive: true })
  git(dir, "init", "-q", "-b", "main")
  fs.writeFileSync(
    path.join(dir, "keel-release.json"),
    JSON.stringify({
      schema: "keel.recipe/v1",
      product: "tool",
      platform: "linux-x64",
      build: ["sh", "build.sh"],
      artifact: "dist/release.tar.gz",
      binary: "tool/bin/tool",
      ...(Object.keys(secrets).length === 0 ? {} : { secrets })
    })
  )
  fs.writeFileSync(
    path.join(dir, "build.sh"),
    [
      "set -e",
      `sleep ${buildDelaySeconds}`,
      'echo "building $RELEASE_PRODUCT $RELEASE_VERSION for $RELEASE_PLATFORM at $RELEASE_REVISION"',
      "mkdir -p out/tool/bin dist",
      'printf "#!/bin/sh\\necho tool $RELEASE_VERSION\\n" > out/tool/bin/tool',
      "chmod 755 out/tool/bin/tool",
      'tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner -C out -czf dist/release.tar.gz tool',
      'env | grep -c "^KEEL_" || true',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
      'if [ -n "${BUILD_TOKEN:-}" ]; then echo "token length ${#BUILD_TOKEN}"; echo "careless: $BUILD_TOKEN"; fi',
      ""
    ].join("\n")
  )
  git(dir, "add", "-A")
  git(dir, "commit", "-q", "-m", "tool")
}

interface Fixture {
  readonly dir: string
  readonly env: Record<string, string>
  readonly objects: string
  /** The control plane's data dir: its database is read through it (keel.db, or its schema under test:pg). */
  readonly dataDir: string
  readonly server: Awaited<ReturnType<typeof startServer>>
  readonly serve: () => ReturnType<typeof startServer>
}

const setUp = async (): Promise<Fixture> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-release-submit-"))
  const key = Ed25519.generateKeyPair()
  const registry = path.join(dir, "registry.yml")
  fs.writeFileSync(
    registry,
    Yaml.stringify({
      version: 1,
      settings: {
        release: { signing_key_item: "release-signing", signing_key_id: key.key_id },
        agent: { skarbiec: { secret_fields: ["build-secrets#token"] } }
      },
      actions: {
        "release-submit": ["builder-forge", "ops"],
        "object-read": ["builder-forge"],
        "fleet-read": ["ops"]
      },
      targets: [
        { name: "box", os: "linux", channel: "local" },
        { name: "forge", os: "linux", channel: "local", release_platform: "linux-x64" }
      ]
    })
  )
  const base = {
    ...(process.env as Record<string, string>),
    KEEL_DATA_DIR: path.join(dir, "data"),
    KEEL_REGISTRY: registry,
    KEEL_DEMO_DATA: "false",
    KEEL_LOG_LEVEL: "warning"
  }
  const run = async (args: ReadonlyArray<string>, input?: string) => {
    const result = await runCtl(args, base, input)
    assert.strictEqual(result.code, 0, `${args.join(" ")}: ${result.stderr}`)
  }
  await run(["vault", "item", "put", "release-signing"], JSON.stringify({ private_key: key.private_key }))
  await run(["vault", "item", "put", "build-secrets"], JSON.stringify({ token: BUILD_SECRET, other: "not allowed" }))
  const opsGrant = path.join(dir, "ops-grant.json")
  await run([
    "vault",
    "grant",
    "create",
    "--consumer",
    "ops",
    "--action",
    "release-submit",
    "--action",
    "fleet-read",
    "--out",
    opsGrant
  ])
  const grantFile = path.join(dir, "builder-grant.json")
  // The builder's ctl: its own data dir, the control plane and its grant file in its environment.
  const builderEnv = (port: number) => ({
    KEEL_REMOTE_CTL: [
      "env",
      `KEEL_DATA_DIR=${path.join(dir, "builder-data")}`,
      `KEEL_CONTROL_PLANE_URL=http://127.0.0.1:${port}`,
      `KEEL_RELEASE_GRANT_FILE=${grantFile}`,
      "KEEL_LOG_LEVEL=warning",
      process.execPath,
      ctlBin
    ].join(" ")
  })
  run([
    "vault",
    "grant",
    "create",
    "--consumer",
    "builder-forge",
    "--action",
    "release-submit",
    "--action",
    "object-read",
    "--item",
    "build-secrets#token",
    "--out",
    grantFile
  ])
  // A fixed port: the builder's ctl (KEEL_REMOTE_CTL, which the server also uses) names it, and a restarted
  // server takes it again.
  const port = await freePort()
  const serve = () =>
    startServer(
      [ctlBin, "serve", "--port", String(port)],
      { ...base, ...builderEnv(port), KEEL_LOG_LEVEL: "info", KEEL_CLUSTER_POLL_INTERVAL: "200 millis" },
      children
    )
  const server = await serve()
  const env = {
    ...base,
    ...builderEnv(server.port),
    KEEL_JOB_LEASE: "10 seconds",
    KEEL_GRANT_FILE: opsGrant,
    KEEL_CONTROL_PLANE_URL: `http://127.0.0.1:${server.port}`
  }
  const workerLog = fs.openSync(path.join(dir, "worker.log"), "a")
  const worker = spawn(process.execPath, [ctlBin, "machine", "work", "--worker", "forge-worker"], {
    env,
    stdio: ["ignore", workerLog, workerLog]
  })
  children.push(worker)
  return {
    dir,
    env,
    serve,
    server,
    objects: path.join(dir, "data", "objects"),
    dataDir: path.join(dir, "data")
  }
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = net.createServer()
    probe.once("error", reject)
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as net.AddressInfo
      probe.close(() => resolve(port))
    })
  })

const submitArgs = (source: string, version: string, extra: ReadonlyArray<string> = []) => [
  ctlBin,
  "release",
  "submit",
  "--source",
  source,
  "--version",
  version,
  "--channel",
  "stable",
  "--wait-seconds",
  "120",
  "--json",
  ...extra
]

const submit = async (f: Fixture, source: string, version: string) => {
  const result = await runCtl(submitArgs(source, version).slice(1), f.env)
  return {
    code: result.code,
    stderr: result.stderr,
    // biome-ignore lint/suspicious/noExplicitAny: answers are checked field by field
    json: (result.stdout.trim() === "" ? null : JSON.parse(result.stdout)) as any
  }
}

const releaseFiles = (f: Fixture, version: string) =>
  PUBLISHED.filter((file) => fs.existsSync(path.join(f.objects, "releases", "tool", version, file)))

/** The publication order as the store shows it: a prefix of the order, never a later file without an earlier. */
const assertOrdered = (present: ReadonlyArray<string>) =>
  assert.deepStrictEqual(present, PUBLISHED.slice(0, present.length), `published out of order: ${present.join(", ")}`)

const jobsOf = (f: Fixture) =>
  queryDataDir<{ id: string; state: string; idempotency_key: string }>(
    f.dataDir,
    "SELECT id, state, idempotency_key FROM jobs WHERE kind = 'release-build'"
  )

const attemptsOf = (f: Fixture, runId: string) => {
  const dir = path.join(f.objects, "release-runs", runId, "builds", "linux-x64")
  return fs.existsSync(dir) ? fs.readdirSync(dir) : []
}

// The timeouts only bound a hang: a loaded machine is 5–10× slower.
const waitFor = async (what: string, check: () => boolean | Promise<boolean>, timeoutMs = 300_000) => {
  const until = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

describe("ctl release submit", () => {
  it("builds on the platform's builder, publishes in order, signs in the vault; a repeat finds the run", async () => {
    const f = await setUp()
    const source = path.join(f.dir, "src")
    writeSource(source, 0, { BUILD_TOKEN: "build-secrets#token" })

    const first = await submit(f, source, "1.0.0")
    assert.strictEqual(first.code, 0, first.stderr)
    assert.isTrue(first.json.created)
    const record = first.json.record
    assert.strictEqual(record.state, "published")
    assert.strictEqual(record.inputs.product, "tool")
    assert.strictEqual(record.inputs.source.revision, git(source, "rev-parse", "HEAD").trim())
    assert.strictEqual(record.steps.builder.target, "forge")
    assert.strictEqual(record.steps.build.key, `${first.json.run_id}:linux-x64`)
    assert.deepStrictEqual(releaseFiles(f, "1.0.0"), PUBLISHED)
    const manifest = JSON.parse(fs.readFileSync(path.join(f.objects, "releases/tool/1.0.0/release.json"), "utf8"))
    assert.strictEqual(manifest.artifact.binary, "tool/bin/tool")
    assert.strictEqual(manifest.artifact.sha256, record.steps.output.artifact.sha256)
    assert.strictEqual(manifest.created_at, record.created_at)

    // The build ran with the release's identity and nothing of Keel's in its environment.
    const log = (await runCtl(["machine", "logs", record.steps.build.job], f.env)).stdout
    assert.include(log, `building tool 1.0.0 for linux-x64 at ${record.inputs.source.revision}`)
    assert.match(log, /^0$/m, "no KEEL_* variable reached the build")
    // The build secret reached the build (its length) and never its log, even when the build printed it.
    assert.include(log, `token length ${BUILD_SECRET.length}`)
    assert.include(log, "careless: [redacted]")
    assert.notInclude(log, BUILD_SECRET)

    // The catalog verifies it; the run record is the one in the store.
    const audit = await runCtl(["release", "catalog", "audit", "--json"], f.env)
    assert.strictEqual(audit.code, 0, audit.stdout)
    assert.deepStrictEqual(
      JSON.parse(audit.stdout).releases.map((r: { version: string; ok: boolean }) => `${r.version}:${r.ok}`),
      ["1.0.0:true"]
    )

    // The same submit again: the same run, found as it stands; no second job, no second build.
    const again = await submit(f, source, "1.0.0")
    assert.strictEqual(again.code, 0, again.stderr)
    assert.isFalse(again.json.created)
    assert.strictEqual(again.json.run_id, first.json.run_id)
    assert.strictEqual(again.json.record.generation, record.generation)
    assert.lengthOf(await jobsOf(f), 1)
    assert.lengthOf(attemptsOf(f, first.json.run_id), 1)

    // The control plane's copies: a lost attempt (a retried job's) and the winner's copies of published bytes.
    const lost = path.join(f.objects, "release-runs", first.json.run_id, "builds", "linux-x64", "0000000000000000")
    fs.mkdirSync(lost, { recursive: true })
    fs.writeFileSync(path.join(lost, "release.tar.gz"), "a lost attempt")
    const ctlJson = async (args: ReadonlyArray<string>) => {
      const result = await runCtl(args, f.env)
      assert.strictEqual(result.code, 0, result.stderr)
      return JSON.parse(result.stdout)
    }
    const dry = await ctlJson(["release", "prune", "--json"])
    assert.deepStrictEqual(
      dry.reclaimed
        .map((c: { key: string; reason: string }) => `${c.key.split("/").slice(-2).join("/")}:${c.reason}`)
        .sort(),
      [
        "0000000000000000/release.tar.gz:lost_attempt",
        `${attemptsOf(f, first.json.run_id).find((a) => a !== "0000000000000000")}/qualification.json:canonical_copy`,
        `${attemptsOf(f, first.json.run_id).find((a) => a !== "0000000000000000")}/release.tar.gz:canonical_copy`
      ].sort()
    )
    assert.isTrue(fs.existsSync(path.join(lost, "release.tar.gz")), "a dry run deletes nothing")
    assert.lengthOf((await ctlJson(["release", "prune", "--apply", "--json"])).reclaimed, 3)
    assert.lengthOf((await ctlJson(["release", "prune", "--json"])).reclaimed, 0)
    // What stays: the run, its output record, its source, the canonical release — and it still verifies.
    for (const kept of ["run.json", "source.tar.gz", "outputs/linux-x64/output.json"])
      assert.isTrue(fs.existsSync(path.join(f.objects, "release-runs", first.json.run_id, kept)), kept)
    const audited = await runCtl(["release", "catalog", "audit"], f.env)
    assert.strictEqual(audited.code, 0, audited.stdout)
    assert.strictEqual((await submit(f, source, "1.0.0")).json.record.state, "published")

    // Refusals write nothing: a dirty tree, a used version for another revision, no recipe.
    fs.writeFileSync(path.join(source, "notes.txt"), "draft")
    const dirty = await submit(f, source, "1.0.1")
    assert.strictEqual(dirty.code, 1)
    assert.strictEqual(dirty.json.error.code, "SOURCE_REFUSED")
    git(source, "add", "-A")
    git(source, "commit", "-q", "-m", "notes")
    const reused = await submit(f, source, "1.0.0")
    assert.strictEqual(reused.code, 1)
    assert.strictEqual(reused.json.error.code, "VERSION_RESERVED")
    assert.deepStrictEqual(releaseFiles(f, "1.0.1"), [])
    const bare = path.join(f.dir, "bare")
    fs.mkdirSync(bare)
    git(bare, "init", "-q")
    fs.writeFileSync(path.join(bare, "x"), "x")
    git(bare, "add", "-A")
    git(bare, "commit", "-q", "-m", "x")
    const norecipe = await submit(f, bare, "1.0.0")
    assert.strictEqual(norecipe.code, 1)
    assert.strictEqual(norecipe.json.error.code, "SUBMIT_REFUSED")
    // A directory that is not a git work tree at all is the source's problem, not a missing recipe.
    const plain = path.join(f.dir, "plain")
    fs.mkdirSync(plain)
    const notGit = await submit(f, plain, "1.0.0")
    assert.strictEqual(notGit.code, 1)
    assert.strictEqual(notGit.json.error.code, "SOURCE_REFUSED")
    // A recipe naming a secret the registry does not allow (agent.skarbiec.secret_fields).
    const greedy = path.join(f.dir, "greedy")
    writeSource(greedy, 0, { OTHER: "build-secrets#other" })
    const refusedSecret = await submit(f, greedy, "3.0.0")
    assert.strictEqual(refusedSecret.code, 1)
    assert.strictEqual(refusedSecret.json.error.code, "SUBMIT_REFUSED")
    assert.include(refusedSecret.json.error.detail, "secret_fields")
    assert.lengthOf(await jobsOf(f), 1)
    // Nor may a grant scope it.
    const grant = await runCtl(
      [
        "vault",
        "grant",
        "create",
        "--consumer",
        "x",
        "--item",
        "build-secrets#other",
        "--out",
        path.join(f.dir, "x.json"),
        "--json"
      ],
      f.env
    )
    assert.strictEqual(grant.code, 1)
    assert.include(grant.stdout + grant.stderr, "SECRET_FIELD_NOT_ALLOWED")
  }, 900_000) // a bound on a hang: builds and each ctl call take 10–20 s apiece on a loaded machine

  it("SIGKILL after each publication object and during the build: submitting again resumes, nothing rebuilt", async () => {
    const f = await setUp()
    const source = path.join(f.dir, "src")
    writeSource(source, 3)
    const version = "2.0.0"

    // Killed while the build runs: the run is recorded as building with its job.
    const during = spawn(process.execPath, submitArgs(source, version), { env: f.env, stdio: "ignore" })
    children.push(during)
    await waitFor(
      "the build job",
      async () => (await dataDirMigrated(f.dataDir)) && (await jobsOf(f)).some((j) => j.state === "running")
    )
    during.kill("SIGKILL")
    assert.deepStrictEqual(releaseFiles(f, version), [])

    // Then killed in the pause after each publication object, one further each time.
    for (const [i, file] of PUBLISHED.entries()) {
      const child = spawn(process.execPath, submitArgs(source, version, ["--step-pause-ms", "3000"]), {
        env: f.env,
        stdio: "ignore"
      })
      children.push(child)
      await waitFor(file, () => fs.existsSync(path.join(f.objects, "releases", "tool", version, file)), 600_000)
      child.kill("SIGKILL")
      await new Promise((resolve) => child.once("exit", resolve))
      const present = releaseFiles(f, version)
      assertOrdered(present)
      assert.strictEqual(present.length, i + 1, `killed after ${file}: ${present.join(", ")}`)
    }

    const done = await submit(f, source, version)
    assert.strictEqual(done.code, 0, done.stderr)
    assert.isFalse(done.json.created)
    assert.strictEqual(done.json.record.state, "published")
    assert.deepStrictEqual(releaseFiles(f, version), PUBLISHED)
    assert.lengthOf(await jobsOf(f), 1, "one build job for the run, ever")
    assert.lengthOf(attemptsOf(f, done.json.run_id), 1, "built once")
    const audit = await runCtl(["release", "catalog", "audit", "--json"], f.env)
    assert.strictEqual(audit.code, 0, audit.stdout)
  }, 1_200_000) // a bound on a hang: five submits and builds, 10–20 s per ctl start on a loaded machine

  it("--detach hands the run to the server's workflow, which finishes it across a server SIGKILL", async () => {
    const f = await setUp()
    const source = path.join(f.dir, "src")
    writeSource(source, 3)
    const version = "4.0.0"
    const detached = await runCtl(submitArgs(source, version, ["--detach"]).slice(1), f.env)
    assert.strictEqual(detached.code, 3, `${detached.stderr}\n${f.server.logs()}`)
    const answer = JSON.parse(detached.stdout)
    assert.match(answer.workflow.execution_id, /\S/)
    const recordFile = path.join(f.objects, "release-runs", answer.run_id, "run.json")
    const state = () => JSON.parse(fs.readFileSync(recordFile, "utf8")).state as string

    // The server drives it: queued, building — then the server dies mid-build.
    await waitFor("the server's build", () => state() === "building")
    f.server.child.kill("SIGKILL")
    await new Promise((resolve) => f.server.child.once("exit", resolve))
    // Restarted, it resumes the workflow on its own: nobody submits again.
    await f.serve()
    await waitFor("the run published by the restarted server", () => state() === "published", 600_000).catch((e) => {
      throw new Error(`${e.message}: ${fs.readFileSync(recordFile, "utf8")}`)
    })
    assert.deepStrictEqual(releaseFiles(f, version), PUBLISHED)
    assert.lengthOf(await jobsOf(f), 1)
    assert.lengthOf(attemptsOf(f, answer.run_id), 1)

    // Submitting again with --detach inspects it.
    const again = await runCtl(submitArgs(source, version, ["--detach"]).slice(1), f.env)
    assert.strictEqual(again.code, 0, again.stderr)
    assert.strictEqual(JSON.parse(again.stdout).record.state, "published")
  }, 1_200_000) // a bound on a hang: two server starts, a build and ctl starts, slow on a loaded machine
})
