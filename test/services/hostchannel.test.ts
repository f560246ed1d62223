import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, Layer, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ChannelSpec, HostChannel, HostChannelLive, ServicesTest, Vault } from "../support/keel.js"
import { sshdAvailable, startSshd, type TestSshd } from "../support/sshd.js"

const runtime = ManagedRuntime.make(
  HostChannelLive.pipe(Layer.provideMerge(ServicesTest({ dataDir: fs.mkdtempSync(`${os.tmpdir()}/keel-channel-`) })))
)
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

let sshd: TestSshd | undefined
const specs: Record<string, () => ChannelSpec> = {
  local: () => ({ kind: "local", target: "here" }),
  ssh: () => ({
    kind: "ssh",
    target: "loopback",
    host: "127.0.0.1",
    port: sshd?.port ?? 0,
    user: sshd?.user ?? "",
    identityItem: "test-ssh#private_key",
    knownHosts: sshd?.knownHosts ?? ""
  })
}

beforeAll(async () => {
  if (!sshdAvailable) return
  sshd = await startSshd()
  await runtime.runPromise(
    Effect.flatMap(Vault, (vault) => vault.putItem("test-ssh", { private_key: sshd!.clientKey }))
  )
}, 120_000) // a bound on a hang: sshd's start is slow on a loaded machine

afterAll(async () => {
  sshd?.stop()
  await runtime.dispose()
})

const run = (spec: ChannelSpec, request: Parameters<HostChannel["Type"]["run"]>[1]) =>
  runtime.runPromise(Effect.flatMap(HostChannel, (channel) => channel.run(spec, request)))

// One contract for both adapters. The ssh half needs Debian's openssh-server (.ci/run installs it).
for (const [name, spec] of Object.entries(specs)) {
  // Skipped only where /usr/sbin/sshd is absent (the title says so); CI installs it.
  describe.skipIf(name === "ssh" && !sshdAvailable)(
    `HostChannel contract: ${name}${name === "ssh" && !sshdAvailable ? " (skipped: no /usr/sbin/sshd)" : ""}`,
    () => {
      it("passes argv through exactly: spaces, quotes, $ and ; reach the program as they are", async () => {
        const words = ["plain", "two words", "it's", "$HOME", "; rm -rf /", "*", "back\\slash"]
        const result = await run(spec(), { argv: ["printf", "%s\\n", ...words] })
        expect(result.exitCode).toBe(0)
        expect(text(result.stdout).split("\n").slice(0, -1)).toEqual(words)
      }, 30_000)

      it("feeds stdin, reports the exit code and stderr", async () => {
        const echoed = await run(spec(), { argv: ["cat"], stdin: new TextEncoder().encode("from stdin") })
        expect(text(echoed.stdout)).toBe("from stdin")
        const failed = await run(spec(), { argv: ["sh", "-c", "echo oops >&2; exit 3"] })
        expect(failed.exitCode).toBe(3)
        expect(text(failed.stderr)).toContain("oops")
      }, 30_000)

      it("kills a command at its timeout and truncates output past the limit", async () => {
        const slow = await run(spec(), { argv: ["sleep", "20"], timeoutMs: 1_500 })
        expect(slow.timedOut).toBe(true)
        expect(slow.exitCode).toBeNull()
        const loud = await run(spec(), { argv: ["head", "-c", "100000", "/dev/zero"], maxOutputBytes: 1_000 })
        expect(loud.truncated).toBe(true)
        expect(loud.stdout.byteLength).toBe(1_000)
      }, 30_000)

      it("a secret sent on stdin never appears in any process's argv", async () => {
        const secret = `s3cr3t-${Math.random().toString(36).slice(2)}`
        const seen: Array<string> = []
        let sampling = true
        const sampler = (async () => {
          while (sampling) {
            for (const pid of fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
              try {
                seen.push(fs.readFileSync(`/proc/${pid}/cmdline`, "utf8"))
              } catch {}
            }
            await new Promise((r) => setTimeout(r, 10))
          }
        })()
        const result = await run(spec(), {
          argv: ["sh", "-c", 'read -r value; sleep 0.5; [ -n "$value" ] && echo received'],
          stdin: new TextEncoder().encode(`${secret}\n`)
        })
        sampling = false
        await sampler
        expect(text(result.stdout).trim()).toBe("received")
        expect(seen.length).toBeGreaterThan(10)
        expect(seen.filter((cmdline) => cmdline.includes(secret))).toEqual([])
        if (name === "ssh") expect(seen.some((c) => c.includes(sshd!.clientKey.slice(40, 80)))).toBe(false)
      }, 30_000)
    }
  )
}

describe.skipIf(!sshdAvailable)("the ssh adapter", () => {
  it("checks the host key strictly: a known_hosts without the host refuses the connection", async () => {
    const empty = `${sshd!.knownHosts}.empty`
    fs.writeFileSync(empty, "")
    const result = await run(
      { ...(specs.ssh!() as Extract<ChannelSpec, { kind: "ssh" }>), knownHosts: empty },
      {
        argv: ["true"]
      }
    )
    expect(result.exitCode).toBe(255)
    expect(text(result.stderr)).toMatch(/Host key verification failed/)
  }, 30_000)

  it("reads the identity from the vault; a missing item is a channel error, not a silent fallback", async () => {
    const failure = await runtime.runPromise(
      Effect.flip(
        Effect.flatMap(HostChannel, (channel) =>
          channel.run(
            { ...(specs.ssh!() as Extract<ChannelSpec, { kind: "ssh" }>), identityItem: "absent#key" },
            {
              argv: ["true"]
            }
          )
        )
      )
    )
    expect(failure._tag).toBe("ChannelError")
  }, 30_000)
})

describe("the ssh identity on disk", () => {
  it("an identity directory left by a dead process is removed when a channel starts; a live one stays", async () => {
    const dataDir = fs.mkdtempSync(`${os.tmpdir()}/keel-run-`)
    const run = path.join(dataDir, "run")
    fs.mkdirSync(path.join(run, "ssh-999999999-stale"), { recursive: true, mode: 0o700 })
    fs.writeFileSync(path.join(run, "ssh-999999999-stale", "id-1"), "PRIVATE KEY", { mode: 0o600 })
    fs.mkdirSync(path.join(run, `ssh-${process.pid}-live`), { mode: 0o700 })
    const fresh = ManagedRuntime.make(HostChannelLive.pipe(Layer.provideMerge(ServicesTest({ dataDir }))))
    await fresh.runPromise(Effect.flatMap(HostChannel, () => Effect.void))
    await fresh.dispose()
    expect(fs.readdirSync(run)).toEqual([`ssh-${process.pid}-live`])
  })

  it.skipIf(!sshdAvailable)(
    "during an ssh call the key sits in a 0600 file in a 0700 directory under the data dir, gone after",
    async () => {
      const dataDir = fs.mkdtempSync(`${os.tmpdir()}/keel-run-`)
      const own = ManagedRuntime.make(HostChannelLive.pipe(Layer.provideMerge(ServicesTest({ dataDir }))))
      await own.runPromise(
        Effect.flatMap(Vault, (vault) => vault.putItem("test-ssh", { private_key: sshd!.clientKey }))
      )
      const run = path.join(dataDir, "run")
      const modes = new Set<string>()
      const sampler = setInterval(() => {
        for (const name of fs.existsSync(run) ? fs.readdirSync(run) : []) {
          const dir = path.join(run, name)
          modes.add(`dir ${(fs.statSync(dir).mode & 0o777).toString(8)}`)
          for (const file of fs.readdirSync(dir))
            modes.add(`file ${(fs.statSync(path.join(dir, file)).mode & 0o777).toString(8)}`)
        }
      }, 10)
      const result = await own.runPromise(
        Effect.flatMap(HostChannel, (channel) => channel.run(specs.ssh!(), { argv: ["sleep", "0.5"] }))
      )
      clearInterval(sampler)
      await own.dispose()
      expect(result.exitCode).toBe(0)
      expect([...modes].sort()).toEqual(["dir 700", "file 600"])
      expect(fs.readdirSync(run)).toEqual([])
    },
    30_000
  )
})
