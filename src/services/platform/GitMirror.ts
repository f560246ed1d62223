import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { Data, Effect } from "effect"
import { simpleGit } from "simple-git"
import { childEnv } from "./ChildEnv.js"
import { sha256Hex } from "./Digest.js"

export class GitFailed extends Data.TaggedError("GitFailed")<{ readonly detail: string }> {}

export interface TreeEntry {
  readonly mode: string
  readonly type: string
  readonly sha: string
  /** Bytes; undefined for non-blobs. */
  readonly size: number | undefined
  readonly path: string
}

const describe = (error: unknown) => (error instanceof Error ? error.message.split("\n")[0] : String(error))

/**
 * Credentials never leave in answers or logs. The userinfo ends at the last `@` before the path: a password
 * holding a literal `@`, `?` or `#` is stripped whole, never split into a "host" that shows its tail (text with
 * no path and an `@` in its query is over-stripped, which shows less, never more).
 */
export const stripCredentials = (url: string) => url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/\s]*@/i, "$1")

/**
 * Every URL in `text` as it may be shown (an answer, a log line, an error): no user or password, and no query
 * or fragment, where a token also travels (`https://host/repo.git?token=…`). For display only: git is given
 * the URL it needs.
 */
export const redactUrls = (text: string) =>
  text
    .replace(/([a-z][a-z0-9+.-]*:\/\/)[^/\s]*@/gi, "$1")
    .replace(/([a-z][a-z0-9+.-]*:\/\/[^\s?#]*)[?#][^\s'"]*/gi, "$1")

/** One URL as it may be shown (see `redactUrls`). */
export const displayUrl = (url: string) => redactUrls(url)

/** An http(s) URL's user and password, taken out of it: git sees the URL without them. */
export const splitCredentials = (
  url: string
): { readonly url: string; readonly username?: string; readonly password?: string } => {
  // Up to the authority's last `@` before the path: a literal `@`, `?` or `#` typed in a password stays in it.
  const match = /^(https?:\/\/)([^/\s]*)@/i.exec(url)
  if (match === null) return { url: stripCredentials(url) }
  const userinfo = match[2] ?? ""
  const colon = userinfo.indexOf(":")
  const decode = (text: string) => {
    try {
      return decodeURIComponent(text)
    } catch {
      return text
    }
  }
  return {
    url: stripCredentials(url),
    username: decode(colon < 0 ? userinfo : userinfo.slice(0, colon)),
    ...(colon < 0 ? {} : { password: decode(userinfo.slice(colon + 1)) })
  }
}

/** How long a git call may go without output before it is killed (a server that never answers). */
export const GIT_STALL_MS = 60_000

const ASKPASS_PREFIX = ".askpass-"

/**
 * The credentials of one git call, in a 0700 directory beside the mirrors: an askpass script and 0600
 * files it prints. git asks it (GIT_ASKPASS) only when the server wants credentials; the directory is
 * removed when the call ends, and ones left by a killed process are swept on the next call.
 */
const askpass = (mirrorsDir: string, credentials: { username?: string; password?: string }) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      fs.mkdirSync(mirrorsDir, { recursive: true })
      for (const name of fs.readdirSync(mirrorsDir)) {
        if (!name.startsWith(ASKPASS_PREFIX)) continue
        const stale = path.join(mirrorsDir, name)
        const age = Date.now() - (fs.statSync(stale, { throwIfNoEntry: false })?.mtimeMs ?? Date.now())
        if (age > 10 * 60_000) fs.rmSync(stale, { recursive: true, force: true })
      }
      const dir = path.join(mirrorsDir, `${ASKPASS_PREFIX}${randomBytes(8).toString("hex")}`)
      fs.mkdirSync(dir, { mode: 0o700 })
      fs.writeFileSync(path.join(dir, "username"), credentials.username ?? "", { mode: 0o600 })
      fs.writeFileSync(path.join(dir, "password"), credentials.password ?? "", { mode: 0o600 })
      const script = path.join(dir, "askpass")
      fs.writeFileSync(
        script,
        '#!/bin/sh\ncase "$1" in\n  Username*|username*) exec cat "$(dirname "$0")/username" ;;\n  *) exec cat "$(dirname "$0")/password" ;;\nesac\n',
        { mode: 0o700 }
      )
      return { dir, script }
    }),
    ({ dir }) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )

/** The environment of every git child: built, no credentials in it, never a terminal prompt. */
const gitEnv = (askpassScript?: string, extra: Readonly<Record<string, string>> = {}) =>
  childEnv({
    GIT_TERMINAL_PROMPT: "0",
    ...(askpassScript === undefined ? {} : { GIT_ASKPASS: askpassScript }),
    ...extra
  })

const git = (
  dir: string | undefined,
  args: ReadonlyArray<string>,
  askpassScript?: string,
  stallMs = GIT_STALL_MS,
  extraEnv: Readonly<Record<string, string>> = {}
) =>
  Effect.tryPromise({
    try: (signal) =>
      simpleGit({
        ...(dir === undefined ? {} : { baseDir: dir }),
        timeout: { block: stallMs },
        abort: signal,
        // Keel sets the askpass and resets credential helpers itself; no user data reaches these.
        unsafe: { allowUnsafeAskPass: true, allowUnsafeCredentialHelper: true },
        allowEnvironment: ["GIT_TERMINAL_PROMPT", "GIT_ASKPASS", ...Object.keys(extraEnv)]
      })
        .env(gitEnv(askpassScript, extraEnv))
        // No helper may store or supply credentials behind our back.
        .raw(["-c", "credential.helper=", ...args]),
    catch: (error) => new GitFailed({ detail: `git ${args[0]}: ${redactUrls(describe(error) ?? "")}` })
  })

/**
 * Read-only access to repositories through bare mirrors under the data dir. Everything is read at a
 * commit (ls-tree, cat-file), never from a work tree, so what is indexed is exactly what was committed.
 */
export const GitMirror = {
  /**
   * Clones (first time) or fetches a bare mirror of `url`; returns its directory. A server that sends
   * nothing for `stallMs` (default 60 s) fails the call, and git is killed.
   */
  sync: (url: string, mirrorsDir: string, options: { readonly stallMs?: number } = {}) =>
    Effect.scoped(
      Effect.gen(function* () {
        // git never sees a password: not in its argv (`ps`), not in the mirror's config, not in errors.
        const plain = splitCredentials(url)
        const dir = path.join(mirrorsDir, sha256Hex(plain.url).slice(0, 24))
        const pass =
          plain.username === undefined && plain.password === undefined ? undefined : yield* askpass(mirrorsDir, plain)
        if (fs.existsSync(path.join(dir, "HEAD"))) {
          yield* git(
            dir,
            ["fetch", "--prune", "--quiet", "origin", "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"],
            pass?.script,
            options.stallMs
          )
        } else {
          yield* Effect.sync(() => fs.mkdirSync(mirrorsDir, { recursive: true }))
          yield* Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
          yield* git(undefined, ["clone", "--mirror", "--quiet", "--", plain.url, dir], pass?.script, options.stallMs)
        }
        return dir
      })
    ),

  /** The commit a ref (branch, tag, sha) names; the mirror's default branch when `ref` is undefined. */
  resolve: (dir: string, ref: string | undefined) =>
    git(dir, ["rev-parse", "--verify", "--quiet", `${ref ?? "HEAD"}^{commit}`]).pipe(
      Effect.map((out) => out.trim()),
      Effect.filterOrFail(
        (sha) => /^[0-9a-f]{40}$/.test(sha),
        () => new GitFailed({ detail: `ref ${ref ?? "HEAD"} does not name a commit` })
      )
    ),

  /** Every entry of the tree at `commit`, recursively, with blob sizes. */
  listFiles: (dir: string, commit: string) =>
    git(dir, ["ls-tree", "-r", "-l", "-z", "--full-tree", commit]).pipe(
      Effect.map((out) =>
        out
          .split("\0")
          .filter((line) => line.length > 0)
          .map((line): TreeEntry => {
            const tab = line.indexOf("\t")
            const [mode = "", type = "", sha = "", size = "-"] = line.slice(0, tab).split(/\s+/)
            return { mode, type, sha, size: size === "-" ? undefined : Number(size), path: line.slice(tab + 1) }
          })
      )
    ),

  /** Paths added/modified and deleted between two commits (renames as delete + add). */
  diff: (dir: string, from: string, to: string) =>
    git(dir, ["diff", "--name-status", "--no-renames", "-z", from, to]).pipe(
      Effect.map((out) => {
        const parts = out.split("\0").filter((p) => p.length > 0)
        const changed: Array<string> = []
        const deleted: Array<string> = []
        for (let i = 0; i + 1 < parts.length; i += 2) {
          const status = parts[i] ?? ""
          const file = parts[i + 1] ?? ""
          ;(status.startsWith("D") ? deleted : changed).push(file)
        }
        return { changed, deleted }
      })
    ),

  /** The bytes of one path at one commit, or undefined when absent. */
  show: (dir: string, commit: string, file: string) =>
    Effect.async<Buffer | undefined, GitFailed>((resume) => {
      const child = spawn("git", ["-C", dir, "cat-file", "blob", `${commit}:${file}`], {
        stdio: ["ignore", "pipe", "pipe"],
        env: gitEnv(),
        timeout: GIT_STALL_MS,
        killSignal: "SIGKILL"
      })
      const chunks: Array<Buffer> = []
      child.stdout.on("data", (c: Buffer) => chunks.push(c))
      child.on("error", (error) => resume(Effect.fail(new GitFailed({ detail: describe(error) ?? "git failed" }))))
      child.on("close", (code) => resume(Effect.succeed(code === 0 ? Buffer.concat(chunks) : undefined)))
      // Interrupted (a request gone, a timeout upstream): the child goes too.
      return Effect.sync(() => child.kill("SIGKILL"))
    }),

  /** The branch the mirror's HEAD names (the remote's default branch). */
  defaultBranch: (dir: string) => git(dir, ["symbolic-ref", "--short", "HEAD"]).pipe(Effect.map((out) => out.trim())),

  /**
   * A commit on `parent` whose only change is `file` set to `bytes`, made in the bare mirror without a work
   * tree (a temporary index), by `author`. Answers the new commit's sha; nothing is pushed.
   */
  commitFile: (
    dir: string,
    parent: string,
    file: string,
    bytes: Uint8Array,
    message: string,
    author: { readonly name: string; readonly email: string }
  ) =>
    Effect.acquireUseRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(dir, "keel-commit-"))),
      (scratch) =>
        Effect.gen(function* () {
          const blobFile = path.join(scratch, "blob")
          fs.writeFileSync(blobFile, bytes)
          const blob = (yield* git(dir, ["hash-object", "-w", "--", blobFile])).trim()
          const env = {
            GIT_INDEX_FILE: path.join(scratch, "index"),
            GIT_AUTHOR_NAME: author.name,
            GIT_AUTHOR_EMAIL: author.email,
            GIT_COMMITTER_NAME: author.name,
            GIT_COMMITTER_EMAIL: author.email
          }
          const at = (args: ReadonlyArray<string>) => git(dir, args, undefined, GIT_STALL_MS, env)
          yield* at(["read-tree", parent])
          yield* at(["update-index", "--add", "--cacheinfo", `100644,${blob},${file}`])
          const tree = (yield* at(["write-tree"])).trim()
          return (yield* at(["commit-tree", tree, "-p", parent, "-m", message])).trim()
        }),
      (scratch) => Effect.sync(() => fs.rmSync(scratch, { recursive: true, force: true }))
    ),

  /**
   * Pushes `commit` to `branch` of `url` as a fast-forward only: `rejected` when the branch moved on the
   * remote since (someone else pushed). Credentials go through the askpass, never argv.
   */
  push: (url: string, mirrorsDir: string, dir: string, commit: string, branch: string, stallMs = GIT_STALL_MS) =>
    Effect.scoped(
      Effect.gen(function* () {
        const plain = splitCredentials(url)
        const pass =
          plain.username === undefined && plain.password === undefined ? undefined : yield* askpass(mirrorsDir, plain)
        const pushed = yield* git(
          dir,
          ["push", "--porcelain", "--", plain.url, `${commit}:refs/heads/${branch}`],
          pass?.script,
          stallMs
        ).pipe(Effect.either)
        if (pushed._tag === "Right") {
          yield* git(dir, ["update-ref", `refs/heads/${branch}`, commit])
          return "pushed" as const
        }
        if (/rejected|non-fast-forward|fetch first/i.test(pushed.left.detail)) return "rejected" as const
        return yield* pushed.left
      })
    ),

  /** Reads many blobs through one `git cat-file --batch` process. */
  readBlobs: (dir: string, shas: ReadonlyArray<string>) =>
    Effect.async<Map<string, Buffer>, GitFailed>((resume) => {
      const blobs = new Map<string, Buffer>()
      if (shas.length === 0) return resume(Effect.succeed(blobs))
      const child = spawn("git", ["-C", dir, "cat-file", "--batch"], {
        stdio: ["pipe", "pipe", "pipe"],
        env: gitEnv(),
        // A whole repository's blobs: bounded, generously.
        timeout: 10 * GIT_STALL_MS,
        killSignal: "SIGKILL"
      })
      let buffer: Buffer = Buffer.alloc(0)
      let index = 0
      child.stdout.on("data", (chunk: Buffer) => {
        buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk])
        for (;;) {
          const newline = buffer.indexOf(10)
          if (newline < 0) return
          const header = buffer.subarray(0, newline).toString()
          const [sha = "", type = "", size = "0"] = header.split(" ")
          if (type === "missing") {
            buffer = buffer.subarray(newline + 1)
            index++
            continue
          }
          const length = Number(size)
          if (buffer.length < newline + 1 + length + 1) return
          blobs.set(sha, Buffer.from(buffer.subarray(newline + 1, newline + 1 + length)))
          buffer = buffer.subarray(newline + 1 + length + 1)
          index++
        }
      })
      child.on("error", (error) => resume(Effect.fail(new GitFailed({ detail: describe(error) ?? "git failed" }))))
      child.on("close", (code) =>
        resume(
          code === 0 && index >= shas.length
            ? Effect.succeed(blobs)
            : Effect.fail(new GitFailed({ detail: `git cat-file --batch ended with ${code}` }))
        )
      )
      child.stdin.on("error", () => {})
      child.stdin.end(`${shas.join("\n")}\n`)
      return Effect.sync(() => child.kill("SIGKILL"))
    })
}
