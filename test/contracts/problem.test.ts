import { STATUS_CODES } from "node:http"
import { describe, expect, it } from "@effect/vitest"
import { PROBLEM_CONTENT_TYPE, problem, STATUS_TITLES, statusTitle } from "../../src/contracts/shared/Problem.js"

// The problem vocabulary is runtime-free (no node:http), so it carries its own copy of Node's reason phrases:
// a problem body's title must stay the phrase Node writes on the status line.
describe("contracts/shared/Problem", () => {
  it("holds Node's reason phrases, every one", () => {
    expect({ ...STATUS_TITLES }).toEqual({ ...STATUS_CODES })
  })

  it("titles a status as the status line does, and names the ones Node has none for", () => {
    expect(statusTitle(413)).toBe("Payload Too Large")
    expect(statusTitle(421)).toBe("Misdirected Request")
    expect(statusTitle(499)).toBe("Client Closed Request")
    expect(statusTitle(599)).toBe("Server Error")
    expect(statusTitle(460)).toBe("Client Error")
  })

  it("builds a problem body with the typed error's fields as extensions", () => {
    expect(problem(404, "AGENT_NOT_FOUND", "no agent a1", { agent_id: "a1" })).toEqual({
      agent_id: "a1",
      type: "urn:keel:problem:agent-not-found",
      title: "Not Found",
      status: 404,
      detail: "no agent a1",
      code: "AGENT_NOT_FOUND"
    })
    expect(PROBLEM_CONTENT_TYPE).toBe("application/problem+json")
  })
})
