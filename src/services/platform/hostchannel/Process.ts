import { spawn } from "node:child_process"
import * as fs from "node:fs"
import { Effect } from "effect"
import { childEnv } from "../ChildEnv.js"
import { ChannelError, type CommandRequest, type CommandResult } from "./HostChannel.js"

const DEFAULT_TIMEOUT_MS = 60_000
const DEFAULT_MAX_OUTPUT = 8 * 1024 * 1024

/**
 * Spawns `argv` directly (no shell), feeds `stdin`, collects both streams up to the output limit,
 * and kills the process group at the timeout. Interruption kills it too.
 */
export const runProcess = (target: string, argv: ReadonlyArray<string>, request: CommandRequest) =>
  Effect.async<CommandResult, ChannelError>((resume) => {
    const [program, ...args] = argv
    if (program === undefined) {
      resume(Effect.fail(new ChannelError({ code: "CHANNEL_ERROR", target, detail: "an empty command" })))
      return
    }
    const started = Date.now()
    const limit = request.maxOutputBytes ?? DEFAULT_MAX_OUTPUT
    // The environment is built: no KEEL_* secret (the vault key) reaches a command or a job.
    const runAs = request.runAs
    const child = spawn(program, args, {
      stdio: ["pipe", "pipe", "pipe"],
      detached: true,
      ...(runAs === undefined
        ? { env: childEnv() }
        : {
            uid: runAs.uid,
            gid: runAs.gid,
            cwd: fs.existsSync(runAs.home) ? runAs.home : "/",
            env: childEnv({ HOME: runAs.home, USER: runAs.user, LOGNAME: runAs.user })
          })
    })
    const out: Array<Buffer> = []
    const err: Array<Buffer> = []
    let sizes = { stdout: 0, stderr: 0 }
    let truncated = false
    let timedOut = false
    let done = false
    const collect = (stream: "stdout" | "stderr", into: Array<Buffer>) => (chunk: Buffer) => {
      request.onOutput?.(stream, chunk)
      const room = limit - sizes[stream]
      if (room <= 0) {
        truncated = true
        return
      }
      const kept = chunk.byteLength > room ? chunk.subarray(0, room) : chunk
      if (kept !== chunk) truncated = true
      into.push(kept)
      sizes = { ...sizes, [stream]: sizes[stream] + kept.byteLength }
    }
    const killGroup = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL")
      } catch {}
    }
    const timer = setTimeout(() => {
      timedOut = true
      killGroup()
    }, request.timeoutMs ?? DEFAULT_TIMEOUT_MS)
    child.stdout.on("data", collect("stdout", out))
    child.stderr.on("data", collect("stderr", err))
    child.stdin.on("error", () => {}) // a command that exits without reading stdin is not an error
    child.on("error", (error) => {
      if (done) return
      done = true
      clearTimeout(timer)
      resume(Effect.fail(new ChannelError({ code: "CHANNEL_ERROR", target, detail: `${program}: ${error.message}` })))
    })
    child.on("close", (code, signal) => {
      if (done) return
      done = true
      clearTimeout(timer)
      resume(
        Effect.succeed({
          exitCode: code,
          signal,
          stdout: new Uint8Array(Buffer.concat(out)),
          stderr: new Uint8Array(Buffer.concat(err)),
          truncated,
          timedOut,
          elapsedMs: Date.now() - started
        })
      )
    })
    if (request.stdinFile !== undefined) {
      const source = fs.createReadStream(request.stdinFile)
      // A file that cannot be read must not look like a short stdin: the command is killed, the run fails.
      source.on("error", (error) => {
        if (done) return
        done = true
        clearTimeout(timer)
        killGroup()
        resume(Effect.fail(new ChannelError({ code: "CHANNEL_ERROR", target, detail: `stdin: ${error.message}` })))
      })
      source.pipe(child.stdin)
    } else child.stdin.end(request.stdin === undefined ? undefined : Buffer.from(request.stdin))
    return Effect.sync(() => {
      clearTimeout(timer)
      killGroup()
    })
  })
