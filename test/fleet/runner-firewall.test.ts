import { execFileSync, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "vitest"
import { nftTableName, renderNftTable, renderPfAnchor } from "../support/keel.js"

// Issue 20, pre-check runner rule 3: the runner uid's firewall — golden renderings (nft and PF, IPv4 and IPv6, the
// one gateway exception), the nft file validated by nft itself, and enforced in a network namespace this test
// creates: the runner's uid reaches the gateway port and nothing else on loopback, while root still does.

const has = (tool: string) => spawnSync("sh", ["-c", `command -v ${tool}`]).status === 0
const nftAvailable = has("nft") && has("unshare")
const isRoot = process.getuid?.() === 0
// The runner uid in the enforcement test: `nobody`, which must be able to run this node binary.
const RUNNER_UID = 65534

describe("the runner's uid firewall", () => {
  it("renders one nftables table: the gateway exception first, then rejects for every private range", () => {
    assert.strictEqual(
      renderNftTable({ uid: 1001, gatewayPort: 9000 }),
      [
        "# Keel pre-check runner firewall for uid 1001 (docs/runners.md); generated, do not edit.",
        "add table inet keel_runner_1001",
        "delete table inet keel_runner_1001",
        "table inet keel_runner_1001 {",
        "  chain output {",
        "    type filter hook output priority 0; policy accept;",
        "    meta skuid 1001 ip daddr 127.0.0.1 tcp dport 9000 accept",
        "    meta skuid 1001 ip6 daddr ::1 tcp dport 9000 accept",
        "    meta skuid 1001 fib daddr type local reject",
        "    meta skuid 1001 ip daddr { 127.0.0.0/8, 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 169.254.0.0/16, 100.64.0.0/10 } reject",
        "    meta skuid 1001 ip6 daddr { ::1/128, fc00::/7, fe80::/10 } reject",
        "  }",
        "}",
        ""
      ].join("\n")
    )
    assert.strictEqual(nftTableName(1001), "keel_runner_1001")
  })

  it("renders the macOS PF anchor the same way", () => {
    assert.strictEqual(
      renderPfAnchor({ uid: 501, gatewayPort: 9000 }),
      [
        "# Keel pre-check runner firewall for uid 501 (docs/runners.md); generated, do not edit.",
        "pass out quick proto tcp from any to 127.0.0.1 port 9000 user 501",
        "pass out quick inet6 proto tcp from any to ::1 port 9000 user 501",
        "block return out quick from any to self user 501",
        "block return out quick inet from any to { 127.0.0.0/8, 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 169.254.0.0/16, 100.64.0.0/10 } user 501",
        "block return out quick inet6 from any to { ::1/128, fc00::/7, fe80::/10 } user 501",
        ""
      ].join("\n")
    )
  })

  it("refuses root's uid and ports that are not ports", () => {
    assert.throws(() => renderNftTable({ uid: 0, gatewayPort: 9000 }), /not a non-root/)
    assert.throws(() => renderPfAnchor({ uid: 501, gatewayPort: 70_000 }), /not a TCP port/)
  })

  it.skipIf(!nftAvailable)("nft itself accepts the rendering, twice in a row (replaced atomically)", () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-nft-")), "runner.nft")
    fs.writeFileSync(file, renderNftTable({ uid: 1001, gatewayPort: 9000 }))
    // -c: check only, in a user and network namespace of our own (no privilege needed).
    const checked = spawnSync("unshare", ["-rn", "nft", "-c", "-f", file], { encoding: "utf8" })
    assert.strictEqual(checked.status, 0, checked.stderr)
  })

  it.skipIf(!nftAvailable || !isRoot || !has("setpriv") || !has("ip"))(
    "enforced in a network namespace: the runner's uid reaches the gateway port only (needs root, nft, setpriv)",
    () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-nft-enforce-"))
      fs.chmodSync(dir, 0o755)
      const rules = path.join(dir, "runner.nft")
      fs.writeFileSync(rules, renderNftTable({ uid: RUNNER_UID, gatewayPort: 9000 }))
      const listen = `require("net").createServer((s) => s.end()).listen(Number(process.argv[2]), process.argv[3])`
      const probe = `
        const net = require("net");
        Promise.all([[9000, "127.0.0.1"], [9001, "127.0.0.1"], [9002, "203.0.113.7"]].map(([port, host]) => new Promise((done) => {
          const socket = net.connect(port, host);
          socket.setTimeout(3000, () => { socket.destroy(); done(port + ":timeout") });
          socket.on("connect", () => { socket.destroy(); done(port + ":reachable") });
          socket.on("error", (e) => done(port + ":" + e.code));
        }))).then((r) => console.log(r.join(" ")));`
      fs.writeFileSync(path.join(dir, "listen.js"), listen)
      fs.writeFileSync(path.join(dir, "probe.js"), probe)
      for (const file of ["listen.js", "probe.js", "runner.nft"]) fs.chmodSync(path.join(dir, file), 0o644)
      const script = [
        "set -e",
        "ip link set lo up",
        // A public address of the host's own (TEST-NET-3): local, so the runner may not reach it either.
        "ip addr add 203.0.113.7/32 dev lo",
        `nft -f ${rules}`,
        `${process.execPath} ${dir}/listen.js 9000 127.0.0.1 & a=$!`,
        `${process.execPath} ${dir}/listen.js 9001 127.0.0.1 & b=$!`,
        `${process.execPath} ${dir}/listen.js 9002 0.0.0.0 & c=$!`,
        "sleep 1",
        `echo "runner $(setpriv --reuid=${RUNNER_UID} --regid=${RUNNER_UID} --clear-groups ${process.execPath} ${dir}/probe.js)"`,
        `echo "root $(${process.execPath} ${dir}/probe.js)"`,
        'kill "$a" "$b" "$c"'
      ].join("\n")
      const result = execFileSync("unshare", ["-n", "sh", "-c", script], { encoding: "utf8", timeout: 30_000 })
      assert.include(result, "runner 9000:reachable 9001:ECONNREFUSED 9002:ECONNREFUSED")
      assert.include(result, "root 9000:reachable 9001:reachable 9002:reachable")
    }
  )
})
