import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import {
  FaultInjector,
  FaultInjectorFromTestSettings,
  FaultInjectorNone
} from "../../src/services/platform/FaultInjector.js"

// Issue 43: fault injection is a port. The live answer is "never"; the test-only settings (KEEL_FAULT_INJECTION=1
// with KEEL_HANDOFF_CRASH_AT / KEEL_HANDOFF_FAIL_AT) are read once, when the layer is built.

const fromSettings = (settings: ReadonlyArray<readonly [string, string]>) =>
  FaultInjectorFromTestSettings.pipe(
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(settings.map(([k, v]) => [k, v])))))
  )

describe("FaultInjector", () => {
  it.effect("the no-op layer never fails or crashes a step", () =>
    Effect.gen(function* () {
      const faults = yield* FaultInjector
      assert.isFalse(faults.failsAt("union"))
      assert.isFalse(faults.failsAt(""))
      yield* faults.crashAfter(os.tmpdir(), "union")
    }).pipe(Effect.provide(FaultInjectorNone))
  )

  it.effect("the step settings do nothing without KEEL_FAULT_INJECTION=1", () =>
    Effect.gen(function* () {
      const faults = yield* FaultInjector
      assert.isFalse(faults.failsAt("union"))
      yield* faults.crashAfter(os.tmpdir(), "capture")
    }).pipe(
      Effect.provide(
        fromSettings([
          ["KEEL_FAULT_INJECTION", "0"],
          ["KEEL_HANDOFF_FAIL_AT", "union"],
          ["KEEL_HANDOFF_CRASH_AT", "capture"]
        ])
      )
    )
  )

  it.effect("enabled, it fails exactly the named step", () =>
    Effect.gen(function* () {
      const faults = yield* FaultInjector
      assert.isTrue(faults.failsAt("union"))
      assert.isFalse(faults.failsAt("checkpoint"))
      assert.isFalse(faults.failsAt(""))
    }).pipe(
      Effect.provide(
        fromSettings([
          ["KEEL_FAULT_INJECTION", "1"],
          ["KEEL_HANDOFF_FAIL_AT", "union"]
        ])
      )
    )
  )

  it.effect("enabled, the crash happens once: a step whose crash marker exists goes on", () =>
    Effect.gen(function* () {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-faults-"))
      fs.writeFileSync(path.join(dir, "crashed-at-union"), "1\n")
      const faults = yield* FaultInjector
      // The marker says this process (or an earlier one) already died there: no second kill.
      yield* faults.crashAfter(dir, "union")
      // Another step than the armed one is never killed.
      yield* faults.crashAfter(dir, "capture")
      assert.deepStrictEqual(fs.readdirSync(dir), ["crashed-at-union"])
    }).pipe(
      Effect.provide(
        fromSettings([
          ["KEEL_FAULT_INJECTION", "1"],
          ["KEEL_HANDOFF_CRASH_AT", "union"]
        ])
      )
    )
  )
})
