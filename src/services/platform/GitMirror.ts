import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { Data, Effect } from "effect"
import { simpleGit } from "simple-git"
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

/** Credentials never leave in answers or logs. */
export const stripCredentials = (url: string) => url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^@/]*@/i, "$1")

const git = (dir: string | undefined, args: ReadonlyArray<string>) =>
  Effect.tryPromise({
    try: () => (dir === undefined ? simpleGit() : simpleGit(dir)).raw([...args]),
    catch: (error) => new GitFailed({ detail: `git ${args[0]}: ${stripCredentials(describe(error) ?? "")}` })
  })

/**
 * Read-only access to repositories through bare mirrors under the data dir. Everything is read at a
 * commit (ls-tree, cat-file), never from a work tree, so what is indexed is exactly what was committed.
 */
export const GitMirror = {
  /** Clones (first time) or fetches a bare mirror of `url`; returns its directory. */
  sync: (url: string, mirrorsDir: string) =>
    Effect.gen(function* () {
      const dir = path.join(mirrorsDir, sha256Hex(url).slice(0, 24))
      if (fs.existsSync(path.join(dir, "HEAD"))) {
        yield* git(dir, [
          "fetch",
          "--prune",
          "--quiet",
          "origin",
          "+refs/heads/*:refs/heads/*",
          "+refs/tags/*:refs/tags/*"
        ])
      } else {
        yield* Effect.sync(() => fs.mkdirSync(mirrorsDir, { recursive: true }))
        yield* Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
        yield* git(undefined, ["clone", "--mirror", "--quiet", url, dir])
      }
      return dir
    }),

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
        stdio: ["ignore", "pipe", "pipe"]
      })
      const chunks: Array<Buffer> = []
      child.stdout.on("data", (c: Buffer) => chunks.push(c))
      child.on("error", (error) => resume(Effect.fail(new GitFailed({ detail: describe(error) ?? "git failed" }))))
      child.on("close", (code) => resume(Effect.succeed(code === 0 ? Buffer.concat(chunks) : undefined)))
    }),

  /** Reads many blobs through one `git cat-file --batch` process. */
  readBlobs: (dir: string, shas: ReadonlyArray<string>) =>
    Effect.async<Map<string, Buffer>, GitFailed>((resume) => {
      const blobs = new Map<string, Buffer>()
      if (shas.length === 0) return resume(Effect.succeed(blobs))
      const child = spawn("git", ["-C", dir, "cat-file", "--batch"], { stdio: ["pipe", "pipe", "pipe"] })
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
      child.stdin.end(`${shas.join("\n")}\n`)
    })
}
