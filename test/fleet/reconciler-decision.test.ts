import { assert, describe, it } from "@effect/vitest"
import { decideUnit, mutatesHost, type UnitEvidence, type UnitState } from "../support/keel.js"

// Issue 17: the decision for one declared unit, row by row of seed 002's tables ("Unit state and service
// reconciliation") and its repair rules. Pure evidence in, decision out.

const PROGRAM = "/usr/local/bin/keel-api"
const SHA = "a".repeat(64)
const OLD = "b".repeat(64)

const declaration = (overrides: Partial<UnitEvidence["declaration"]> = {}): UnitEvidence["declaration"] => ({
  name: "api",
  unit: "/etc/systemd/system/keel-api.service",
  program: PROGRAM,
  args: ["serve"],
  kind: "service",
  ...overrides
})

const row = (overrides: Partial<UnitState> = {}): UnitState => ({
  name: "api",
  unit: "/etc/systemd/system/keel-api.service",
  manager: "systemd",
  load_state: "loaded",
  active_state: "active",
  sub_state: "running",
  main_pid: 812,
  exec_start: `${PROGRAM} serve`,
  fragment_path: "/etc/systemd/system/keel-api.service",
  process: { pid: 812, executable: PROGRAM, sha256: SHA },
  need_daemon_reload: false,
  unit_file_state: "enabled",
  invocation_id: "1",
  program_sha256: SHA,
  error: null,
  ...overrides
})

const decide = (evidence: Partial<UnitEvidence>) =>
  decideUnit({ declaration: declaration(), beacon: "fresh", ...evidence })

describe("unit state and service reconciliation (first table)", () => {
  it("any unit of a host whose beacon is missing or stale is unknown and authorizes nothing", () => {
    for (const beacon of ["missing", "stale"] as const) {
      const decision = decide({ beacon, row: row({ active_state: "failed" }), channelAnswers: true })
      assert.deepInclude(decision, { state: "unknown", action: "none" })
      assert.isFalse(mutatesHost(decision))
    }
  })

  it("the beacon unit of a silent host is reasserted when its channel answers (and only then)", () => {
    const beaconUnit = declaration({ name: "keel-beacon", kind: "oneshot-timer", role: "beacon" })
    assert.deepInclude(decideUnit({ declaration: beaconUnit, beacon: "stale", channelAnswers: true }), {
      state: "beacon_silent",
      action: "reassert_beacon"
    })
    assert.deepInclude(decideUnit({ declaration: beaconUnit, beacon: "missing", channelAnswers: false }), {
      state: "unknown",
      action: "none"
    })
  })

  it("a failed unit is handled like a missing one: service ensure", () => {
    assert.deepInclude(decide({ row: row({ active_state: "failed", main_pid: 0, process: null }) }), {
      state: "failed",
      action: "ensure"
    })
    assert.deepInclude(decide({ row: row({ load_state: "not-found", active_state: "inactive", process: null }) }), {
      state: "missing",
      action: "ensure"
    })
  })

  it("a live process on a stale copy of its declared binary is kicked", () => {
    assert.deepInclude(
      decide({ row: row({ process: { pid: 812, executable: `${PROGRAM} (deleted)`, sha256: OLD } }) }),
      {
        state: "stale_binary",
        action: "kick"
      }
    )
    // Same path, other bytes than the declared program's on disk: stale too.
    assert.deepInclude(decide({ row: row({ process: { pid: 812, executable: PROGRAM, sha256: OLD } }) }), {
      state: "stale_binary",
      action: "kick"
    })
  })

  it("a process running a binary the unit never declared is refused as identity_unresolved", () => {
    const decision = decide({ row: row({ process: { pid: 812, executable: "/usr/bin/python3", sha256: OLD } }) })
    assert.deepInclude(decision, { state: "identity_unresolved", action: "refuse" })
    assert.isFalse(mutatesHost(decision))
  })

  it("a healthy unit running its declared binary needs nothing", () => {
    assert.deepInclude(decide({ row: row() }), { state: "healthy", action: "none" })
  })
})

describe("a fresh beacon that omits a declared unit (second table)", () => {
  it("observed: a loaded unit running the declared program at another path is adopted; unproven ownership is refused", () => {
    const elsewhere = row({ fragment_path: "/lib/systemd/system/keel-api.service" })
    assert.deepInclude(decide({ endpoint: "observed", probe: elsewhere }), {
      state: "relocated",
      action: "adopt",
      unit: "/lib/systemd/system/keel-api.service"
    })
    const notOurs = row({ process: { pid: 9, executable: "/usr/sbin/nginx", sha256: OLD } })
    assert.deepInclude(decide({ endpoint: "observed", probe: notOurs }), {
      state: "identity_unresolved",
      action: "refuse"
    })
    assert.deepInclude(decide({ endpoint: "observed" }), { state: "identity_unresolved", action: "refuse" })
  })

  it("unreachable: the idempotent ensure path", () => {
    assert.deepInclude(decide({ endpoint: "unreachable" }), { state: "missing", action: "ensure" })
  })

  it("not declared in the service directory: the host channel is the evidence — only a unit the host reports absent is ensured", () => {
    const absent = row({ load_state: "not-found", active_state: "inactive", process: null })
    assert.deepInclude(decide({ endpoint: "not_declared", probe: absent }), { state: "missing", action: "ensure" })
    assert.deepInclude(decide({ endpoint: "not_declared", probe: row() }), { state: "healthy", action: "none" })
    const foreign = row({ process: { pid: 9, executable: "/opt/other", sha256: OLD } })
    assert.deepInclude(decide({ endpoint: "not_declared", probe: foreign }), {
      state: "identity_unresolved",
      action: "refuse"
    })
    // A host that cannot be probed proves nothing either way.
    assert.deepInclude(decide({ endpoint: "not_declared", probe: undefined }), { state: "unknown", action: "none" })
  })

  it("unverified: endpoint_unverified, nothing changes", () => {
    const decision = decide({ endpoint: "unverified" })
    assert.deepInclude(decision, { state: "endpoint_unverified", action: "none" })
    assert.isFalse(mutatesHost(decision))
  })
})

describe("repair rules", () => {
  it("rule 2: a declaration naming only its unit path is declaration_incomplete, never ensured", () => {
    const pathOnly = declaration({ program: undefined, args: [] })
    for (const evidence of [
      { row: row({ active_state: "failed", process: null }) },
      { endpoint: "unreachable" as const },
      { row: row({ load_state: "not-found", process: null }) }
    ]) {
      const decision = decideUnit({ declaration: pathOnly, beacon: "fresh", ...evidence })
      assert.deepInclude(decision, { state: "declaration_incomplete", action: "refuse" })
      assert.isFalse(mutatesHost(decision), "a refusal made before any host command")
    }
  })

  it("rule 5: recovery-managed units are never converted or ensured", () => {
    const recovery = declaration({ name: "keel-recovery", kind: "recovery-managed", program: undefined })
    for (const evidence of [{ row: row({ active_state: "failed" }) }, { endpoint: "unreachable" as const }])
      assert.deepInclude(decideUnit({ declaration: recovery, beacon: "fresh", ...evidence }), {
        state: "recovery_managed",
        action: "none"
      })
  })

  it("rule 6: a failed oneshot beacon keeps its installed timer — reasserted, never a service ensure", () => {
    const beaconUnit = declaration({ name: "keel-beacon", kind: "oneshot-timer", role: "beacon" })
    assert.deepInclude(decideUnit({ declaration: beaconUnit, beacon: "fresh", row: row({ active_state: "failed" }) }), {
      state: "beacon_silent",
      action: "reassert_beacon"
    })
    // Not installed at all: installing it is `ctl host beacon install`'s, never a service ensure's.
    const absent = row({ load_state: "not-found", active_state: "inactive", process: null })
    assert.deepInclude(decideUnit({ declaration: beaconUnit, beacon: "fresh", row: absent }), {
      state: "beacon_missing",
      action: "none"
    })
    // Issue 42 item 9: a fresh beacon that omits its own unit, which the host reports absent (or whose endpoint does
    // not answer) is not a service ensure's either — the same rule 6 an operator's `ctl service ensure` follows.
    for (const evidence of [{ endpoint: "not_declared" as const, probe: absent }, { endpoint: "unreachable" as const }])
      assert.deepInclude(decideUnit({ declaration: beaconUnit, beacon: "fresh", ...evidence }), {
        state: "beacon_missing",
        action: "none"
      })
  })
})
