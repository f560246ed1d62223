import { assert, describe, it } from "@effect/vitest"
import { bearerToken, isLoopbackHost } from "../support/keel.js"

describe("credentials in requests", () => {
  it("a bearer token is read whatever the scheme's case, with one or more spaces", () => {
    for (const header of ["Bearer abc", "bearer abc", "BEARER abc", "Bearer   abc", " Bearer abc "])
      assert.strictEqual(bearerToken(header), "abc", header)
    for (const header of [undefined, "", "Bearer", "Basic abc", "Bearer a b", "Bearerabc"])
      assert.isUndefined(bearerToken(header), String(header))
  })

  it("loopback is all of 127.0.0.0/8, ::1 (also IPv4-mapped and bracketed) and localhost", () => {
    for (const host of ["127.0.0.1", "127.1.2.3", "127.255.255.254", "::1", "[::1]", "::ffff:127.0.0.1", "localhost"])
      assert.isTrue(isLoopbackHost(host), host)
    // As a URL's hostname, an IPv4-mapped address is written in hex.
    assert.strictEqual(new URL("http://[::ffff:127.0.0.1]:8080/").hostname, "[::ffff:7f00:1]")
    for (const host of ["[::ffff:7f00:1]", "[::FFFF:7F01:203]", "::ffff:7fff:fffe"])
      assert.isTrue(isLoopbackHost(host), host)
    for (const host of ["[::ffff:a00:1]", "[::ffff:8000:1]"]) assert.isFalse(isLoopbackHost(host), host)
    for (const host of ["128.0.0.1", "10.0.0.1", "127.0.0.1.example.com", "::2", "0.0.0.0", "localhost.evil"])
      assert.isFalse(isLoopbackHost(host), host)
  })
})
