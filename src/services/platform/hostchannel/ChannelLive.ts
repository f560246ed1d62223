import { randomBytes } from "node:crypto"
import * as fsSync from "node:fs"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Effect, Layer } from "effect"
import { AppConfig } from "../AppConfig.js"
import { Vault } from "../vault/Vault.js"
import { ChannelError, HostChannel, shellQuote } from "./HostChannel.js"
import { runProcess } from "./Process.js"

const IDENTITY_PREFIX = "ssh-"

/** Whether process `pid` still exists (a dead one's identity directory is stale). */
const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/**
 * Identity directories of processes that died mid-call (killed during an ssh call) are removed: each is
 * named `ssh-<pid>-…`, and its process is gone.
 */
const sweepStaleIdentities = (base: string) => {
  for (const name of fsSync.existsSync(base) ? fsSync.readdirSync(base) : []) {
    const pid = Number(name.slice(IDENTITY_PREFIX.length).split("-")[0])
    if (name.startsWith(IDENTITY_PREFIX) && Number.isInteger(pid) && !alive(pid))
      fsSync.rmSync(path.join(base, name), { recursive: true, force: true })
  }
}

/**
 * The live channel: `local` runs the command here; `ssh` runs it through the OpenSSH client in batch
 * mode with strict host-key checking against the declared known_hosts file, the identity read from
 * the vault into a 0600 file in a 0700 directory under the data dir (`<data dir>/run/ssh-<pid>-…`),
 * removed after the call; ones a killed process left behind are removed when the next channel starts.
 */
export const HostChannelLive = Layer.effect(
  HostChannel,
  Effect.gen(function* () {
    const vault = yield* Vault
    const base = path.resolve((yield* AppConfig).dataDir, "run")
    yield* Effect.sync(() => sweepStaleIdentities(base))
    return {
      run: (spec, request) => {
        if (spec.kind === "local") return runProcess(spec.target, request.argv, request)
        const failure = (detail: string) => new ChannelError({ code: "CHANNEL_ERROR", target: spec.target, detail })
        return Effect.acquireUseRelease(
          Effect.gen(function* () {
            const [item = "", field = ""] = spec.identityItem.split("#")
            const fields = yield* vault.getItem(item).pipe(Effect.mapError((e) => failure(e.detail)))
            const key = fields[field]
            if (key === undefined) return yield* failure(`vault item ${item} has no field ${field}`)
            const dir = yield* Effect.tryPromise({
              try: async () => {
                await fs.mkdir(base, { recursive: true, mode: 0o700 })
                const made = await fs.mkdtemp(path.join(base, `${IDENTITY_PREFIX}${process.pid}-`))
                await fs.chmod(made, 0o700)
                return made
              },
              catch: (e) => failure(String(e))
            })
            const file = path.join(dir, `id-${randomBytes(4).toString("hex")}`)
            yield* Effect.tryPromise({
              try: () => fs.writeFile(file, key.endsWith("\n") ? key : `${key}\n`, { mode: 0o600 }),
              catch: (e) => failure(String(e))
            })
            return { dir, file }
          }),
          ({ file }) =>
            runProcess(
              spec.target,
              [
                "ssh",
                "-o",
                "BatchMode=yes",
                "-o",
                "StrictHostKeyChecking=yes",
                "-o",
                `UserKnownHostsFile=${spec.knownHosts}`,
                "-o",
                "GlobalKnownHostsFile=/dev/null",
                "-o",
                "IdentitiesOnly=yes",
                "-o",
                "ConnectTimeout=10",
                "-i",
                file,
                "-p",
                String(spec.port),
                "-l",
                spec.user,
                spec.host,
                "--",
                // ssh hands the remote shell one string: each word is quoted, so it sees exactly argv.
                request.argv.map(shellQuote).join(" ")
              ],
              // ssh reads the identity as this process's user; on the host the command runs as the target's user.
              { ...request, runAs: undefined }
            ),
          ({ dir }) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
        )
      }
    }
  })
)
