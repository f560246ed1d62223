import { OpenApi } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import { ControlPlaneApi } from "../../src/contracts/controlplane/Api.js"
import { BeaconPublication } from "../../src/contracts/fleet/FleetHosts.js"
import { beaconDocument } from "../support/controlplane.js"
import { decoderFor, type OpenApiSchema } from "../support/openapi.js"

// A body a service validates itself, or a document an answer relays as stored, is still described for clients
// (issue 43): the OpenAPI document says its shape, while the server keeps its own rules and the stored bytes.

describe("described request bodies", () => {
  it("PUT /api/host-health's body is the keel.beacon/v1 document", () => {
    const spec = OpenApi.fromApi(ControlPlaneApi) as OpenApiSchema
    const schema = spec.paths["/api/host-health"].put.requestBody.content["application/json"].schema
    const decode = decoderFor(spec.components?.schemas ?? {})
    const beacon = beaconDocument("forge-1", "2026-11-23T10:00:00.000Z")
    assert.deepStrictEqual(decode(schema, beacon), [])
    assert.deepStrictEqual(decode(schema, { ...beacon, extra: 1 }), ["$.extra: not in the schema"])
    assert.deepStrictEqual(decode(schema, { ...beacon, os: "windows" }), ["$.os: windows not in enum"])
    assert.includeMembers([...decode(schema, {})], ["$.schema: missing", "$.reported_at: missing", "$.units: missing"])
  })
})

describe("relayed documents", () => {
  const present = (document: unknown) => ({ state: "present", document, age_seconds: 1 })
  const decode = Schema.decodeUnknownEither(BeaconPublication, { onExcessProperty: "error" })

  it("a fleet host's beacon publication describes the stored beacon, older ones included", () => {
    const beacon = beaconDocument("forge-1", "2026-11-23T10:00:00.000Z")
    const unit = {
      name: "keel-api",
      unit: "keel-api.service",
      manager: "systemd",
      load_state: "loaded",
      active_state: "active",
      sub_state: "running",
      main_pid: 812,
      exec_start: null,
      fragment_path: null,
      process: null,
      error: null
    }
    // Stored before need_daemon_reload, unit_file_state, invocation_id and program_sha256: relayed as it is.
    assert.isTrue(Either.isRight(decode(present({ ...beacon, units: [unit] }))))
    assert.isTrue(Either.isLeft(decode(present({ ...beacon, reported_at: "yesterday" }))))
    assert.isTrue(Either.isLeft(decode(present({ hello: "world" }))))
  })
})
