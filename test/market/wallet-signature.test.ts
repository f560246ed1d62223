import { assert, describe, it } from "@effect/vitest"
import {
  addressOfPrivateKey,
  canonicalMessage,
  checksumAddress,
  isAddress,
  personalMessageHash,
  recoverAddress,
  signPersonal,
  signRequest,
  WALLET_AUTH_VERSION
} from "../../src/services/market/WalletSignature.js"
import { sha256Hex } from "../../src/services/platform/Digest.js"

// The web3.js documentation key, and the first Hardhat/Anvil development account.
const ALICE_KEY = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
const ALICE = "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23"
const BOB_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
const BOB = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"

const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
const toHex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex")

const sample = {
  method: "post",
  pathWithQuery: "/api/tokens/FOO/buy",
  bodySha256: sha256Hex('{"amount":"1.5"}'),
  timestamp: "1700000000",
  nonce: "00112233445566778899aabbccddeeff"
}

describe("addresses", () => {
  it("derives the known address of a private key, in EIP-55 form", () => {
    assert.strictEqual(addressOfPrivateKey(ALICE_KEY), ALICE)
    assert.strictEqual(addressOfPrivateKey(BOB_KEY), BOB)
    assert.strictEqual(addressOfPrivateKey(ALICE_KEY.slice(2)), ALICE)
  })

  it("checksums the EIP-55 reference vectors", () => {
    for (const address of [
      "0x52908400098527886E0F7030069857D2E4169EE7",
      "0x8617E340B3D01FA5F11F306F4090FD50E238070D",
      "0xde709f2102306220921060314715629080e2fb77",
      "0x27b1fdb04752bbc536007a920d24acb045561c26",
      "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
      "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
      "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
      "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb"
    ]) {
      assert.strictEqual(checksumAddress(address.toLowerCase()), address)
      assert.strictEqual(checksumAddress(address.toUpperCase().replace("0X", "0x")), address)
    }
  })

  it("recognises addresses in any case and rejects the rest", () => {
    assert.isTrue(isAddress(ALICE))
    assert.isTrue(isAddress(ALICE.toLowerCase()))
    assert.isFalse(isAddress(ALICE.slice(2)))
    assert.isFalse(isAddress(`${ALICE}00`))
    assert.isFalse(isAddress(ALICE.slice(0, -1)))
    assert.isFalse(isAddress(`${ALICE.slice(0, -1)}g`))
  })
})

describe("personal_sign", () => {
  it("matches the web3.js accounts.sign vector", () => {
    assert.strictEqual(
      toHex(personalMessageHash("Some data")),
      "1da44b586eb0729ff70a73c326926f6ed5a25f5b056e7f47fbc6e58d86871655"
    )
    assert.strictEqual(
      signPersonal(ALICE_KEY, "Some data"),
      "0xb91467e570a6466aa9e9876cbcd013baba02900b8979d43fe208a4a4f339f5fd6007e74cd82e037b800186422fc2da167c747ef045e5d18a5f5d4300f8e1a0291c"
    )
  })

  it("prefixes the UTF-8 byte length, not the string length", () => {
    const hash = (text: string) => toHex(personalMessageHash(text))
    assert.notStrictEqual(hash("é"), hash("e"))
    assert.strictEqual(recoverAddress("héllo ✓", signPersonal(BOB_KEY, "héllo ✓")), BOB.toLowerCase())
  })

  it("recovers the signer of a canonical request", () => {
    const message = canonicalMessage(sample)
    for (const [key, address] of [
      [ALICE_KEY, ALICE],
      [BOB_KEY, BOB]
    ] as const) {
      const signature = signPersonal(key, message)
      assert.match(signature, /^0x[0-9a-f]{128}(1b|1c)$/)
      assert.strictEqual(recoverAddress(message, signature), address.toLowerCase())
    }
  })

  it("a tampered body hash recovers someone else", () => {
    const signature = signPersonal(ALICE_KEY, canonicalMessage(sample))
    const tampered = canonicalMessage({ ...sample, bodySha256: sha256Hex('{"amount":"1500"}') })
    const recovered = recoverAddress(tampered, signature)
    assert.notStrictEqual(recovered, ALICE.toLowerCase())
    assert.notStrictEqual(recovered, BOB.toLowerCase())
  })

  it("refuses the high-s mirror of a signature (EIP-2): one signature, one way to write it", () => {
    const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n
    const message = canonicalMessage(sample)
    for (const key of [ALICE_KEY, BOB_KEY]) {
      const signature = signPersonal(key, message)
      const r = signature.slice(2, 66)
      const s = BigInt(`0x${signature.slice(66, 130)}`)
      const v = Number.parseInt(signature.slice(-2), 16)
      const mirrored = `0x${r}${(N - s).toString(16).padStart(64, "0")}${(v === 27 ? 28 : 27).toString(16)}`
      assert.isDefined(recoverAddress(message, signature))
      assert.isUndefined(recoverAddress(message, mirrored))
    }
  })

  it("accepts the bare recovery bit as v", () => {
    const message = canonicalMessage(sample)
    for (const key of [ALICE_KEY, BOB_KEY]) {
      const signature = signPersonal(key, message)
      const bare = `${signature.slice(0, -2)}0${Number.parseInt(signature.slice(-2), 16) - 27}`
      assert.strictEqual(recoverAddress(message, bare), recoverAddress(message, signature))
    }
  })

  it("returns undefined for malformed signatures without throwing", () => {
    const message = canonicalMessage(sample)
    const signature = signPersonal(ALICE_KEY, message)
    const body = signature.slice(0, -2)
    const zero = "0".repeat(64)
    const max = "f".repeat(64)
    for (const bad of [
      `${body}1d`,
      `${body}1a`,
      `${body}02`,
      `${body}ff`,
      signature.slice(0, -2),
      signature.slice(0, -1),
      `${signature}00`,
      signature.slice(2),
      `0x${"g"}${signature.slice(3)}`,
      `0x${zero}${zero}1b`,
      `0x${max}${max}1b`,
      `0x${max}${signature.slice(66)}`,
      "",
      "0x"
    ]) {
      assert.isUndefined(recoverAddress(message, bad), bad)
    }
  })
})

describe("canonical request", () => {
  it("is six newline-separated lines, byte for byte", () => {
    assert.strictEqual(
      canonicalMessage({
        method: "get",
        pathWithQuery: "/api/coin/balance?user_id=0xabc&x=1",
        bodySha256: sha256Hex(""),
        timestamp: "1700000000",
        nonce: "n-1"
      }),
      `keel-wallet-auth-v1\nGET\n/api/coin/balance?user_id=0xabc&x=1\n${EMPTY_SHA256}\n1700000000\nn-1`
    )
    assert.strictEqual(canonicalMessage(sample).split("\n")[0], WALLET_AUTH_VERSION)
  })

  it("hashes strings as UTF-8 and bytes as given", () => {
    assert.strictEqual(sha256Hex(""), EMPTY_SHA256)
    assert.strictEqual(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    assert.strictEqual(sha256Hex(new TextEncoder().encode("héllo")), sha256Hex("héllo"))
  })
})

describe("signRequest", () => {
  it("produces headers that verify through the canonical message", () => {
    const body = '{"amount":"1.5"}'
    const headers = signRequest(BOB_KEY, { method: "post", pathWithQuery: "/api/tokens/FOO/buy", body })
    assert.strictEqual(headers["x-wallet-address"], BOB)
    assert.match(headers["x-wallet-nonce"]!, /^[0-9a-f]{32}$/)
    assert.approximately(Number(headers["x-wallet-timestamp"]), Date.now() / 1000, 5)

    const verify = (bodySha256: string) =>
      recoverAddress(
        canonicalMessage({
          method: "POST",
          pathWithQuery: "/api/tokens/FOO/buy",
          bodySha256,
          timestamp: headers["x-wallet-timestamp"]!,
          nonce: headers["x-wallet-nonce"]!
        }),
        headers["x-wallet-signature"]!
      )
    assert.strictEqual(verify(sha256Hex(new TextEncoder().encode(body))), BOB.toLowerCase())
    assert.notStrictEqual(verify(EMPTY_SHA256), BOB.toLowerCase())
  })

  it("uses the given timestamp and nonce, and the empty-body hash when there is no body", () => {
    const headers = signRequest(ALICE_KEY, {
      method: "GET",
      pathWithQuery: "/api/coin/balance?user_id=0xab",
      timestamp: 1_700_000_000,
      nonce: "fixed"
    })
    assert.strictEqual(headers["x-wallet-timestamp"], "1700000000")
    assert.strictEqual(headers["x-wallet-nonce"], "fixed")
    const message = `${WALLET_AUTH_VERSION}\nGET\n/api/coin/balance?user_id=0xab\n${EMPTY_SHA256}\n1700000000\nfixed`
    assert.strictEqual(headers["x-wallet-signature"], signPersonal(ALICE_KEY, message))
    assert.strictEqual(recoverAddress(message, headers["x-wallet-signature"]!), ALICE.toLowerCase())
  })

  it("draws a fresh nonce per request", () => {
    const a = signRequest(ALICE_KEY, { method: "GET", pathWithQuery: "/" })
    const b = signRequest(ALICE_KEY, { method: "GET", pathWithQuery: "/" })
    assert.notStrictEqual(a["x-wallet-nonce"], b["x-wallet-nonce"])
  })
})
