import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, type Scope } from "effect"
import { TransferFileUnavailable } from "./Errors.js"

/** `-` is stdout (export) or stdin (import), as for `pg_dump` and `psql`. */
export const STANDARD_STREAM = "-"

/** Where a file argument points, as reports show it: an absolute path, or `-`. */
export const shownPath = (file: string) => (file === STANDARD_STREAM ? STANDARD_STREAM : path.resolve(file))

const unavailable = (doing: string, file: string) => (cause: unknown) => {
  const error = cause as { code?: unknown; message?: unknown }
  const reason =
    typeof error?.code === "string" && typeof error.message === "string"
      ? error.message.replace(/^[A-Z]+: /, "").replace(/, \w+ '.*'$/, "")
      : String(cause)
  return new TransferFileUnavailable({
    code: "TRANSFER_FILE_UNAVAILABLE",
    detail: `cannot ${doing} ${shownPath(file)}: ${reason}`
  })
}

export interface LineSink {
  /** Appends lines (each gets its newline). */
  readonly write: (lines: ReadonlyArray<string>) => Effect.Effect<void, TransferFileUnavailable>
  /** Flushes and, for a file, makes it appear under its name; returns the bytes written. */
  readonly commit: Effect.Effect<number, TransferFileUnavailable>
}

/** Lines are gathered to about this many characters before a write. */
const FLUSH_AT = 1 << 20

/**
 * The export's output. A file is written beside its name (`<file>.<random>.partial`, mode 0600: the export holds
 * the vault's sealed items and key hashes), synced and renamed over the name only when the export completes, so
 * an export that fails never leaves a file that looks whole. `-` writes to stdout.
 */
export const openSink = (file: string): Effect.Effect<LineSink, TransferFileUnavailable, Scope.Scope> =>
  Effect.gen(function* () {
    const toStdout = file === STANDARD_STREAM
    const partial = `${file}.${randomBytes(4).toString("hex")}.partial`
    const handle = toStdout
      ? undefined
      : yield* Effect.acquireRelease(
          Effect.tryPromise({ try: () => fs.promises.open(partial, "wx", 0o600), catch: unavailable("write", file) }),
          (opened) => Effect.promise(() => opened.close().catch(() => undefined))
        )
    let committed = false
    yield* Effect.addFinalizer(() =>
      committed || toStdout ? Effect.void : Effect.sync(() => fs.rmSync(partial, { force: true }))
    )
    let buffered: Array<string> = []
    let size = 0
    let bytes = 0
    const flush = Effect.suspend(() => {
      if (buffered.length === 0) return Effect.void
      const chunk = Buffer.from(buffered.join(""), "utf8")
      buffered = []
      size = 0
      bytes += chunk.byteLength
      return Effect.tryPromise({
        try: () =>
          handle !== undefined
            ? handle.write(chunk).then(() => undefined)
            : new Promise<void>((resolve, reject) => process.stdout.write(chunk, (e) => (e ? reject(e) : resolve()))),
        catch: unavailable("write", file)
      })
    })
    const write = (lines: ReadonlyArray<string>) =>
      Effect.suspend(() => {
        for (const line of lines) {
          buffered.push(line, "\n")
          size += line.length + 1
        }
        return size >= FLUSH_AT ? flush : Effect.void
      })
    const commit = Effect.gen(function* () {
      yield* flush
      if (handle !== undefined)
        yield* Effect.tryPromise({
          try: async () => {
            await handle.sync()
            await fs.promises.rename(partial, file)
          },
          catch: unavailable("write", file)
        })
      committed = true
      return bytes
    })
    return { write, commit } satisfies LineSink
  })

export interface LineSource {
  /** The next line (without its newline), or undefined at the end. */
  readonly next: Effect.Effect<string | undefined, TransferFileUnavailable>
  /** The number of the line `next` returned last, from 1. */
  readonly lineNumber: () => number
}

/** The import's input, a line at a time: a file, or stdin for `-`. */
export const openSource = (file: string): Effect.Effect<LineSource, TransferFileUnavailable, Scope.Scope> =>
  Effect.gen(function* () {
    const stream: NodeJS.ReadableStream = yield* Effect.acquireRelease(
      file === STANDARD_STREAM
        ? Effect.succeed<NodeJS.ReadableStream>(process.stdin)
        : Effect.tryPromise({
            // Opened first, so a missing or unreadable file is one clear line, not a stream error later.
            try: () => fs.promises.open(file, "r").then((opened): NodeJS.ReadableStream => opened.createReadStream()),
            catch: unavailable("read", file)
          }),
      (opened) => Effect.sync(() => (opened === process.stdin ? opened.pause() : (opened as fs.ReadStream).destroy()))
    )
    stream.setEncoding("utf8")
    const chunks = stream[Symbol.asyncIterator]() as AsyncIterator<string>
    // What was read and not yet returned is `pending` from `start` on (no copy per line).
    let pending = ""
    let start = 0
    let ended = false
    let line = 0
    const next: Effect.Effect<string | undefined, TransferFileUnavailable> = Effect.suspend(() => {
      const end = pending.indexOf("\n", start)
      if (end !== -1 || (ended && start < pending.length)) {
        const text = pending.slice(start, end === -1 ? pending.length : end)
        start = end === -1 ? pending.length : end + 1
        line++
        return Effect.succeed(text.endsWith("\r") ? text.slice(0, -1) : text)
      }
      if (ended) return Effect.succeed(undefined)
      return Effect.flatMap(
        Effect.tryPromise({ try: () => chunks.next(), catch: unavailable("read", file) }),
        (chunk) => {
          if (chunk.done === true) ended = true
          else {
            pending = pending.slice(start) + chunk.value
            start = 0
          }
          return next
        }
      )
    })
    return { next, lineNumber: () => line } satisfies LineSource
  })
