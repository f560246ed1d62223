import { type ChildProcess, spawn } from "node:child_process"
import * as http from "node:http"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

export const root = fileURLToPath(new URL("../..", import.meta.url))
export const ctlBin = path.join(root, "bin", "ctl.js")

/**
 * Starts a server process (the built package) and resolves with its port once it logs that it
 * listens. Every child is pushed onto `children` so the test file can kill what is left.
 */
export const startServer = (
  args: ReadonlyArray<string>,
  env: Record<string, string | undefined>,
  children: Array<ChildProcess>
) =>
  new Promise<{ child: ChildProcess; port: number; logs: () => string }>((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: root,
      env: { ...process.env, KEEL_LOG_FORMAT: "json", KEEL_LOG_LEVEL: "info", ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    children.push(child)
    let output = ""
    // Only a guard against a server that hangs: a loaded machine has taken over 20 s to start one.
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 120_000)
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const match = /Listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(output)
      if (match) {
        clearTimeout(timer)
        resolve({ child, port: Number(match[1]), logs: () => output })
      }
    }
    child.stdout?.on("data", onData)
    child.stderr?.on("data", onData)
    child.on("exit", (code) => {
      clearTimeout(timer)
      reject(new Error(`server exited with ${code}:\n${output}`))
    })
  })

/** One request to a server process on a fresh connection (no keep-alive): its status and its whole body. */
export const requestChild = (
  port: number,
  request: {
    method: string
    path: string
    headers?: Record<string, string>
    body?: unknown
    /** The JSON body's exact text (for numbers JSON.stringify cannot write), instead of `body`. */
    rawBody?: string
  }
) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const text = request.rawBody ?? (request.body === undefined ? "" : JSON.stringify(request.body))
    const req = http.request(
      {
        host: "127.0.0.1",
        port,
        path: request.path,
        method: request.method,
        agent: false,
        headers: {
          ...request.headers,
          ...(request.body === undefined && request.rawBody === undefined
            ? {}
            : { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
        }
      },
      (res) => {
        let data = ""
        res.setEncoding("utf8")
        res.on("data", (chunk) => {
          data += chunk
        })
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: data }))
        res.on("error", reject)
      }
    )
    req.on("error", reject)
    req.end(text)
  })

/**
 * `node bin/ctl.js <args>` as a child process, awaited. Tests use this rather than spawnSync for anything that may
 * run long: a worker blocked in spawnSync cannot answer vitest's RPC, whose fixed 60 s timeout fails the run
 * (every test green) on a loaded machine.
 */
export const runCtl = (args: ReadonlyArray<string>, env: Record<string, string | undefined>, input?: string | Buffer) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [ctlBin, ...args], { cwd: root, env, stdio: ["pipe", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk
    })
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk
    })
    child.on("error", reject)
    child.on("close", (code) => resolve({ code, stdout, stderr }))
    child.stdin.end(input ?? "")
  })

/**
 * `runCtl` for a call that must succeed: resolves with its stdout, and rejects (naming the exit code and stderr)
 * when it exits non-zero, as execFileSync threw.
 */
export const runCtlOk = async (
  args: ReadonlyArray<string>,
  env: Record<string, string | undefined>,
  input?: string | Buffer
): Promise<string> => {
  const result = await runCtl(args, env, input)
  if (result.code !== 0)
    throw new Error(`ctl ${args.join(" ")} exited ${result.code}\n${result.stderr}\n${result.stdout}`)
  return result.stdout
}

/**
 * `GET /api/stream` on a server process, kept open: resolves once the stream has opened (its `retry:` frame) with the
 * event ids it has sent so far, in arrival order (the array grows as frames come), and `close` to hang up.
 */
export const openEventStream = (port: number) =>
  new Promise<{ readonly ids: Array<number>; readonly close: () => void }>((resolve, reject) => {
    const ids: Array<number> = []
    let text = ""
    let opened = false
    const request = http.get({ host: "127.0.0.1", port, path: "/api/stream", agent: false }, (res) => {
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        text += chunk
        const frames = text.split("\n\n")
        text = frames.pop() ?? ""
        for (const frame of frames) {
          const id = /^id: (\d+)$/m.exec(frame)
          if (id !== null) ids.push(Number(id[1]))
          if (!opened && frame.startsWith("retry:")) {
            opened = true
            resolve({ ids, close: () => request.destroy() })
          }
        }
      })
    })
    request.on("error", (error) => {
      if (!opened) reject(error)
    })
  })
