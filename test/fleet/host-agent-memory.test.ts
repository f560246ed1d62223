import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import {
  HostAgent,
  HostAgentMemoryTest,
  HostAgentProtocol,
  HostUnits,
  makeMemoryHostAgent,
  type Target
} from "../support/keel.js"

// The memory host agent (layers/Test.ts): the control plane's side of the host protocol without a process — each
// target its own memory service manager, silent hosts and endpoint answers — and HostUnits reaching units through it.

const target = (name: string, channel: Target["channel"] = "local") =>
  ({ name, os: "linux", channel, mounts: [], services: [], roles: [] }) as unknown as Target
const ssh = { ssh: { host: "h.invalid", port: 22, user: "keel", identity_item: "fleet-ssh#private_key" } }
const web = {
  name: "web",
  unit: "/etc/systemd/system/web.service",
  program: "/bin/true",
  args: [],
  kind: "service" as const,
  text: "[Service]\nExecStart=/bin/true\n"
}

describe("the memory host agent", () => {
  it.effect(
    "each target is its own host: a unit ensured on one is not on the other, and HostUnits goes through the agent",
    () => {
      const memory = makeMemoryHostAgent({ kernel: "Linux 6.9.0 aarch64" })
      return Effect.gen(function* () {
        const units = yield* HostUnits
        const ensured = yield* units.ensure(target("forge-1", ssh), web)
        assert.strictEqual(ensured.change, "created")
        assert.strictEqual((yield* units.inspect(target("forge-1", ssh), web)).active_state, "active")
        assert.strictEqual((yield* units.inspect(target("forge-2"), web)).load_state, "not-found")
        assert.deepStrictEqual(memory.host("forge-1").commands.length > 0, true)
        assert.deepStrictEqual(memory.host("forge-2").commands, [])
        assert.strictEqual(yield* (yield* HostAgent).for(target("forge-2")).kernel, "Linux 6.9.0 aarch64")
      }).pipe(Effect.provide(HostAgentMemoryTest(memory)))
    }
  )

  it.effect("a silent host is unreachable for every operation; endpoint answers are per consumer", () => {
    const memory = makeMemoryHostAgent()
    memory.setSilent("forge-1", true)
    memory.setEndpoint("*", "http://web/health", "observed")
    return Effect.gen(function* () {
      const agent = yield* HostAgent
      const silent = agent.for(target("forge-1", ssh))
      const failure = yield* Effect.flip(silent.ensure(web))
      assert.strictEqual(failure._tag, "HostUnreachable")
      assert.strictEqual((yield* Effect.flip(silent.beacon))._tag, "HostUnreachable")
      assert.isNull(yield* silent.kernel)
      assert.strictEqual(yield* (yield* HostUnits).probe(target("forge-2"), "http://web/health"), "observed")
      assert.strictEqual(yield* agent.for(target("forge-2")).probe("http://other/health"), "unreachable")
    }).pipe(Effect.provide(HostAgentMemoryTest(memory)))
  })
})

describe("the janitor report answer", () => {
  it("a pass an older ctl recorded (a field added since is missing) is relayed key for key, not refused", () => {
    const recorded = { writer: "watch", host: "forge-1", outcome: "report_only", deleted: [], zeta: 1, alpha: 2 }
    const answer = { cleanup_state: { outcome: "report_only", report: recorded } }
    const decoded = Schema.decodeUnknownSync(HostAgentProtocol.JanitorReportOperation.answer)(answer)
    assert.strictEqual(JSON.stringify(decoded), JSON.stringify(answer))
    assert.isFalse(Schema.is(HostAgentProtocol.CleanupReport)(recorded))
  })
})
