import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Schema } from "effect"
import { type CommandResult, HostChannelTest, makeMemoryHostChannel, RemoteCtl, ServicesTest } from "../support/keel.js"

const registryFile = path.join(fileURLToPath(new URL("../..", import.meta.url)), "examples", "registry.yml")
const bytes = (text: string) => new TextEncoder().encode(text)

/** A host channel that answers every command with `answer` and records what it was asked to run. */
const RemoteCtlTest = (answer: Partial<CommandResult>) => {
  const memory = makeMemoryHostChannel(() => answer)
  const channel = HostChannelTest(memory)
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
  return { calls: memory.calls, layer }
}

/** An operation as the host protocol declares one (src/contracts/fleet/HostAgent.ts). */
const SpaceReport = {
  operation: "space report",
  argv: ({ target }: { readonly target: string }) => ["space", "report", target],
  timeoutMs: () => 5_000,
  answer: Schema.Struct({ outcome: Schema.String })
}
const Health = { ...SpaceReport, argv: () => ["host", "health"], timeoutMs: () => 1_000 }

describe("RemoteCtl: ctl on another host of the fleet", () => {
  it.effect(
    "runs KEEL_REMOTE_CTL with the operation's arguments on the target's declared channel and decodes its answer",
    () => {
      const remote = RemoteCtlTest({ exitCode: 3, stdout: bytes('{"outcome":"partial"}\n') })
      return Effect.gen(function* () {
        const ctl = yield* RemoteCtl
        const answer = yield* ctl.call(yield* ctl.target("forge-2"), SpaceReport, { target: "forge-2" })
        assert.deepStrictEqual(answer, { exitCode: 3, answer: { outcome: "partial" } })
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
    }
  )

  it.effect(
    "an unknown target, no answer, an answer that is not JSON, one the operation does not declare and a timeout are failures that say so",
    () =>
      Effect.gen(function* () {
        const failure = (answer: Partial<CommandResult>, target = "forge-2") => {
          const remote = RemoteCtlTest(answer)
          return Effect.gen(function* () {
            const ctl = yield* RemoteCtl
            return yield* Effect.flip(Effect.flatMap(ctl.target(target), (t) => ctl.call(t, Health, {})))
          }).pipe(Effect.provide(remote.layer))
        }
        const unknown = yield* failure({}, "forge-9")
        assert.strictEqual(unknown.detail, "forge-9 is not a target of the registry")
        const silent = yield* failure({ exitCode: 127, stderr: bytes("ctl: command not found\n") })
        assert.strictEqual(silent.detail, "forge-2 answered nothing (exit 127): ctl: command not found")
        const garbled = yield* failure({ stdout: bytes("Welcome to forge-2!\n") })
        assert.include(garbled.detail, "answered no JSON")
        const undeclared = yield* failure({ exitCode: 1, stdout: bytes('{"error":{"code":"X","detail":"no"}}\n') })
        assert.strictEqual(undeclared._tag, "RemoteAnswerInvalid")
        assert.include(undeclared.detail, "forge-2 answered an unknown document to space report")
        const late = yield* failure({ exitCode: null, timedOut: true })
        assert.include(late.detail, "did not answer within 1 s (exit killed)")
      })
  )
})
