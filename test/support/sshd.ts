import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"

export const SSHD = "/usr/sbin/sshd"
export const sshdAvailable = fs.existsSync(SSHD) && fs.existsSync("/usr/bin/ssh")

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = net.createServer()
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject()))
    })
  })

export interface TestSshd {
  readonly port: number
  readonly user: string
  readonly clientKey: string
  readonly knownHosts: string
  readonly stop: () => void
}

/**
 * A real OpenSSH server on a loopback port, with its own host key, client key and config in a temp
 * dir: the ssh channel is tested against the real thing, not a mock.
 */
export const startSshd = async (
  options: {
    /** The address it listens on (default 127.0.0.1). */
    readonly address?: string
    /** A network namespace (`ip netns add`) it runs in: a host of its own, reached over the test's veth pair. */
    readonly netns?: string
    /** The one user it lets in (default: this process's). */
    readonly user?: string
  } = {}
): Promise<TestSshd & { readonly host: string }> => {
  const address = options.address ?? "127.0.0.1"
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-sshd-"))
  const keygen = (name: string) =>
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", path.join(dir, name)])
  keygen("host_key")
  keygen("client_key")
  fs.copyFileSync(path.join(dir, "client_key.pub"), path.join(dir, "authorized_keys"))
  if (options.user !== undefined) {
    // sshd reads the authorized keys as the user it lets in; the private keys stay owner-only.
    fs.chmodSync(dir, 0o755)
    fs.chmodSync(path.join(dir, "authorized_keys"), 0o644)
  }
  const port = await freePort()
  const user = options.user ?? os.userInfo().username
  fs.writeFileSync(
    path.join(dir, "sshd_config"),
    [
      `Port ${port}`,
      `ListenAddress ${address}`,
      `HostKey ${path.join(dir, "host_key")}`,
      `PidFile ${path.join(dir, "sshd.pid")}`,
      `AuthorizedKeysFile ${path.join(dir, "authorized_keys")}`,
      "StrictModes no",
      "UsePAM no",
      "PasswordAuthentication no",
      "KbdInteractiveAuthentication no",
      "PubkeyAuthentication yes",
      "PermitRootLogin prohibit-password",
      `AllowUsers ${user}`,
      "LogLevel ERROR",
      ""
    ].join("\n")
  )
  fs.mkdirSync("/run/sshd", { recursive: true })
  const hostKey = fs.readFileSync(path.join(dir, "host_key.pub"), "utf8").trim().split(" ").slice(0, 2).join(" ")
  const knownHosts = path.join(dir, "known_hosts")
  fs.writeFileSync(knownHosts, `[${address}]:${port} ${hostKey}\n`)
  const argv = [SSHD, "-D", "-e", "-f", path.join(dir, "sshd_config")]
  const [command, ...args] = options.netns === undefined ? argv : ["ip", "netns", "exec", options.netns, ...argv]
  const child: ChildProcess = spawn(command!, args, { stdio: ["ignore", "ignore", "pipe"] })
  let stderr = ""
  child.stderr?.on("data", (c) => {
    stderr += c
  })
  // Ready when the port accepts connections. The deadline only bounds a hang: a loaded machine starts sshd slowly.
  const deadline = Date.now() + 60_000
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect({ host: address, port }, () => {
        socket.destroy()
        resolve(true)
      })
      socket.on("error", () => resolve(false))
    })
    if (open) break
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`sshd did not start: ${stderr}`)
    await new Promise((r) => setTimeout(r, 50))
  }
  return {
    host: address,
    port,
    user,
    clientKey: fs.readFileSync(path.join(dir, "client_key"), "utf8"),
    knownHosts,
    stop: () => {
      child.kill("SIGTERM")
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }
}

/** The registry channel that reaches `sshd` with the vault item `fleet-ssh#private_key` (the client key). */
export const sshChannel = (sshd: TestSshd & { readonly host?: string }) => ({
  ssh: {
    host: sshd.host ?? "127.0.0.1",
    port: sshd.port,
    user: sshd.user,
    identity_item: "fleet-ssh#private_key",
    known_hosts: sshd.knownHosts
  }
})
