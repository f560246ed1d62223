import { spawn } from "node:child_process"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, Option, Schema } from "effect"
import { childEnv } from "../../../platform/ChildEnv.js"

/** The source cannot be released: not a repository, uncommitted or dirty, or git failed. Nothing was written. */
export class SourceRefused extends Schema.TaggedError<SourceRefused>()("SourceRefused", {
  code: Schema.Literal("SOURCE_REFUSED"),
  detail: Schema.String
}) {}

export interface SourceIdentity {
  /** The commit the archive was made from (40 hex), and its tree. */
  readonly revision: string
  readonly tree: string
  /** SHA-256 and size of the archive's bytes. */
  readonly sha256: string
  readonly size: number
}

/** git, locally, with a built environment (no KEEL_* secret; never a prompt); its stdout into `out` when given. */
const git = (cwd: string, args: ReadonlyArray<string>, out?: string) =>
  Effect.async<{ code: number | null; stdout: string; stderr: string; sha256: string; size: number }, SourceRefused>(
    (resume) => {
      const child = spawn("git", args, {
        cwd,
        env: childEnv({ GIT_TERMINAL_PROMPT: "0" }),
        stdio: ["ignore", "pipe", "pipe"]
      })
      const hash = createHash("sha256")
      let size = 0
      const chunks: Array<Buffer> = []
      const errors: Array<Buffer> = []
      const sink = out === undefined ? undefined : fs.createWriteStream(out, { flags: "wx", mode: 0o600 })
      child.stdout.on("data", (chunk: Buffer) => {
        if (sink === undefined) chunks.push(chunk)
        else {
          hash.update(chunk)
          size += chunk.byteLength
        }
      })
      if (sink !== undefined) child.stdout.pipe(sink)
      child.stderr.on("data", (chunk: Buffer) => errors.push(chunk))
      child.on("error", (error) =>
        resume(Effect.fail(new SourceRefused({ code: "SOURCE_REFUSED", detail: `git: ${error.message}` })))
      )
      child.on("close", (code) => {
        const done = () =>
          resume(
            Effect.succeed({
              code,
              stdout: Buffer.concat(chunks).toString("utf8"),
              stderr: Buffer.concat(errors).toString("utf8").trim(),
              sha256: hash.digest("hex"),
              size
            })
          )
        if (sink === undefined) done()
        else if (sink.writableFinished) done()
        else sink.once("finish", done)
      })
    }
  )

/**
 * The committed tree of `source` as a `.tar.gz` (docs/releases.md, "Submit"): refused when `source` is not the top
 * of a git work tree, has no commit, or has any change — staged, unstaged or untracked (`git status --porcelain
 * --untracked-files=all` prints nothing). The archive is `git archive` of the resolved commit id (never a tree id,
 * whose entries would carry the current time) with `tar.umask=0022` and `core.autocrlf=false`, under the prefix
 * `<product>-<version>/`: the same commit gives the same bytes with the same git. No remote is ever contacted.
 */
/** Refused unless `source` is the top of a git work tree (what every read of a release's source assumes). */
export const checkSourceTop = (source: string) =>
  Effect.gen(function* () {
    const refused = (detail: string) => new SourceRefused({ code: "SOURCE_REFUSED", detail })
    const root = path.resolve(source)
    if (!fs.existsSync(root)) return yield* refused(`${root} does not exist`)
    const top = yield* git(root, ["rev-parse", "--show-toplevel"])
    if (top.code !== 0) return yield* refused(`${root} is not a git work tree: ${top.stderr}`)
    if (fs.realpathSync(top.stdout.trim()) !== fs.realpathSync(root))
      return yield* refused(`${root} is inside the work tree ${top.stdout.trim()}: give its top`)
    return root
  })

export const archiveSource = (source: string, product: string, version: string, out: string) =>
  Effect.gen(function* () {
    const refused = (detail: string) => new SourceRefused({ code: "SOURCE_REFUSED", detail })
    const root = yield* checkSourceTop(source)
    const head = yield* git(root, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
    if (head.code !== 0) return yield* refused(`${root} has no commit: commit the tree first`)
    const status = yield* git(root, ["status", "--porcelain=v1", "--untracked-files=all"])
    if (status.code !== 0) return yield* refused(`git status failed: ${status.stderr}`)
    const changes = status.stdout.split("\n").filter((line) => line.trim() !== "")
    if (changes.length > 0)
      return yield* refused(
        `${root} has ${changes.length} uncommitted change(s) (first: ${changes[0]!.trim()}): a release is made from a clean committed tree`
      )
    const revision = head.stdout.trim()
    const tree = (yield* git(root, ["rev-parse", `${revision}^{tree}`])).stdout.trim()
    fs.rmSync(out, { force: true })
    const archived = yield* git(
      root,
      [
        "-c",
        "tar.umask=0022",
        "-c",
        "core.autocrlf=false",
        "archive",
        "--format=tar.gz",
        `--prefix=${product}-${version}/`,
        revision
      ],
      out
    )
    if (archived.code !== 0) {
      fs.rmSync(out, { force: true })
      return yield* refused(`git archive failed: ${archived.stderr}`)
    }
    return { revision, tree, sha256: archived.sha256, size: archived.size } satisfies SourceIdentity
  })

/** A file of commit `revision` as committed (not as the work tree holds it), as text; none when it has none. */
export const committedFile = (source: string, revision: string, file: string) =>
  Effect.map(git(path.resolve(source), ["show", `${revision}:${file}`]), (shown) =>
    shown.code === 0 ? Option.some(shown.stdout) : Option.none<string>()
  )

/** The commit's time (seconds since the epoch): what reproducible builds call SOURCE_DATE_EPOCH. */
export const commitTime = (source: string, revision: string) =>
  Effect.map(git(path.resolve(source), ["show", "-s", "--format=%ct", revision]), (shown) =>
    Number.parseInt(shown.stdout.trim(), 10)
  )

/** The commit a tag names and the commit checked out (HEAD), or none when the tag does not exist. */
export const tagAndHead = (source: string, tag: string) =>
  Effect.gen(function* () {
    const root = path.resolve(source)
    const tagged = yield* git(root, ["rev-parse", "--verify", "--quiet", `refs/tags/${tag}^{commit}`])
    const head = yield* git(root, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
    return {
      tag: tagged.code === 0 ? Option.some(tagged.stdout.trim()) : Option.none<string>(),
      head: head.code === 0 ? Option.some(head.stdout.trim()) : Option.none<string>()
    }
  })
