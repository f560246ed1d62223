import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, Layer } from "effect"
import { Vault } from "../vault/Vault.js"
import { ChannelError, HostChannel, shellQuote } from "./HostChannel.js"
import { runProcess } from "./Process.js"

/**
 * The live channel: `local` runs the command here; `ssh` runs it through the OpenSSH client in batch
 * mode with strict host-key checking against the declared known_hosts file, the identity read from
 * the vault into a 0600 file that is removed after the call.
 */
export const HostChannelLive = Layer.effect(
  HostChannel,
  Effect.gen(function* () {
    const vault = yield* Vault
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
              try: () => fs.mkdtemp(path.join(os.tmpdir(), "keel-ssh-")),
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
              request
            ),
          ({ dir }) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
        )
      }
    }
  })
)
