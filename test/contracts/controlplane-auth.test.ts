import { HttpApi, OpenApi } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { Context, Option } from "effect"
import { ControlPlaneApi } from "../../src/contracts/controlplane/Api.js"
import { FleetAuth, ReconcileAuth, RequiredAction } from "../../src/contracts/controlplane/FleetAuth.js"
import { requiredActions } from "../../src/http/controlplane/FleetAuth.js"

// Issue 43: control-plane authorization is one middleware reading each endpoint's RequiredAction annotation.
// An endpoint under the middleware without an action would be refused at run time (a defect): this finds it first,
// and holds the annotation to the action each endpoint's description promises ("Needs <action>").

interface Endpoint {
  readonly key: string
  readonly guarded: boolean
  readonly action: string | undefined
  readonly described: string | undefined
}

const endpoints = (): ReadonlyArray<Endpoint> => {
  const found: Array<Endpoint> = []
  HttpApi.reflect(ControlPlaneApi as unknown as HttpApi.HttpApi.AnyWithProps, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, mergedAnnotations, middleware }) => {
      const description = Context.getOption(mergedAnnotations, OpenApi.Description)
      const tags = new Set<unknown>(middleware)
      found.push({
        key: `${endpoint.method} ${endpoint.path}`,
        guarded: tags.has(FleetAuth) || tags.has(ReconcileAuth),
        action: Option.getOrUndefined(Context.getOption(mergedAnnotations, RequiredAction)),
        described: Option.getOrUndefined(description)?.match(/Needs ([a-z-]+)/)?.[1]
      })
    }
  })
  return found
}

describe("control-plane authorization contract", () => {
  it("every endpoint under FleetAuth or ReconcileAuth names its registry action, the one its description names", () => {
    const all = endpoints()
    const guarded = all.filter((e) => e.guarded)
    // Only an object write authorizes in its service: the action it needs follows the key its path names (a
    // host's beacon or state, a release, anything else), which the middleware does not read. Beacons and object
    // reads are under the middleware (issue 43).
    assert.sameMembers(
      all.filter((e) => !e.guarded).map((e) => e.key),
      ["PUT /api/objects/*", "DELETE /api/objects/*"]
    )
    assert.isAbove(guarded.length, 15)
    for (const e of guarded) {
      assert.isDefined(e.action, `${e.key} declares a RequiredAction`)
      assert.strictEqual(e.action, e.described, `${e.key}: the annotation is the action its description names`)
    }
  })

  it("the middleware's lookup finds each guarded endpoint by the route the router matches", () => {
    const actions = requiredActions(ControlPlaneApi)
    for (const e of endpoints().filter((e) => e.guarded)) assert.strictEqual(actions.get(e.key), e.action, e.key)
    assert.strictEqual(actions.get("GET /api/fleet/gates/:host"), "fleet-read")
    assert.strictEqual(actions.get("POST /api/fleet/services/runs"), "service-ensure")
    assert.strictEqual(actions.get("POST /api/host/storage-root-reconcile"), "storage-reconcile-apply")
    assert.strictEqual(actions.get("PUT /api/host-health"), "host-health-write")
    assert.strictEqual(actions.get("GET /api/objects"), "object-read")
    assert.strictEqual(actions.get("GET /api/objects/*"), "object-read")
    assert.strictEqual(actions.get("HEAD /api/objects/*"), "object-read")
  })
})
