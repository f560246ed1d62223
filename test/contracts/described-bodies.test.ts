import { OpenApi } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { ControlPlaneApi } from "../../src/contracts/controlplane/Api.js"
import { beaconDocument } from "../support/controlplane.js"
import { decoderFor, type OpenApiSchema } from "../support/openapi.js"

// A body a service validates itself is still described for clients (issue 43): the OpenAPI document says what to
// send, as a generated client would check it, while the server answers with the service's own rules.

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
