import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { type ChannelSpec, type CommandResult, HostChannel, RemoteCtl, ServicesTest } from "keel"

const registryFile = path.join(fileURLToPath(new URL("../..", import.meta.url)), "examples", "registry.yml")
const bytes = (text: string) => new TextEncoder().encode(text)

/** A host channel that answers every command with `answer` and records what it was asked to run. */
const RemoteCtlTest = (answer: Partial<CommandResult>) => {
  const calls: Array<{ spec: ChannelSpec; argv: ReadonlyArray<string>; timeoutMs: number | undefined }> = []
  const channel = Layer.succeed(HostChannel, {
    run: (spec, request) =>
      Effect.sync(() => {
        calls.push({ spec, argv: request.argv, timeoutMs: request.timeoutMs })
        return {
          exitCode: 0,
          signal: null,
          stdout: bytes(""),
          stderr: bytes(""),
          truncated: false,
          timedOut: false,
          elapsedMs: 1,
          ...answer
        }
      })
  })
  const layer = RemoteCtl.Default.pipe(
    Layer.provideMerge(channel),
    Layer.provideMerge(ServicesTest()),
    Layer.provide(
      Layer.setConfigProvider(
        ConfigProvider.fromMap(
          new Map([
            ["KEEL_REGISTRY", registryFile],
            ["KEEL_REMOTE_CTL", "/opt/keel/bin/ctl --quiet"],
            ["KEEL_SSH_KNOWN_HOSTS", "/etc/keel/known_hosts"]
          ])
        )
      )
    )
  )
  return { calls, layer }
}

describe("RemoteCtl: ctl on another host of the fleet", () => {
  it.effect("runs KEEL_REMOTE_CTL with the arguments on the target's declared channel and parses its JSON", () => {
    const remote = RemoteCtlTest({ exitCode: 3, stdout: bytes('{"outcome":"partial"}\n') })
    return Effect.gen(function* () {
      const ctl = yield* RemoteCtl
      const answer = yield* ctl.runJson(yield* ctl.target("forge-2"), ["space", "report", "forge-2"], 5_000)
      assert.deepStrictEqual(answer, { exitCode: 3, json: { outcome: "partial" } })
      assert.deepStrictEqual(remote.calls, [
        {
          spec: {
            kind: "ssh",
            target: "forge-2",
            host: "forge-2.internal",
            port: 22,
            user: "keel",
            identityItem: "fleet-ssh#private_key",
            knownHosts: "/etc/keel/known_hosts"
          },
          argv: ["/opt/keel/bin/ctl", "--quiet", "space", "report", "forge-2"],
          timeoutMs: 5_000
        }
      ])
    }).pipe(Effect.provide(remote.layer))
  })

  it.effect("an unknown target, no answer, an answer that is not JSON and a timeout are failures that say so", () =>
    Effect.gen(function* () {
      const failure = (answer: Partial<CommandResult>, target = "forge-2") => {
        const remote = RemoteCtlTest(answer)
        return Effect.gen(function* () {
          const ctl = yield* RemoteCtl
          return yield* Effect.flip(
            Effect.flatMap(ctl.target(target), (t) => ctl.runJson(t, ["host", "health"], 1_000))
          )
        }).pipe(Effect.provide(remote.layer))
      }
      const unknown = yield* failure({}, "forge-9")
      assert.strictEqual(unknown.detail, "forge-9 is not a target of the registry")
      const silent = yield* failure({ exitCode: 127, stderr: bytes("ctl: command not found\n") })
      assert.strictEqual(silent.detail, "forge-2 answered nothing (exit 127): ctl: command not found")
      const garbled = yield* failure({ stdout: bytes("Welcome to forge-2!\n") })
      assert.include(garbled.detail, "answered no JSON")
      const late = yield* failure({ exitCode: null, timedOut: true })
      assert.include(late.detail, "did not answer within 1 s (exit killed)")
    })
  )
})
