import * as http from "node:http"
import { SqlClient } from "@effect/sql"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { HttpTest } from "../support/http.js"
import {
  Agents,
  ApiKeys,
  CoinHistory,
  checksumAddress,
  Ledger,
  signRequest,
  toUnits,
  walletAccount
} from "../support/keel.js"
import { call, fundedWallet, launchAgent, readStream, serverPort, testWallet } from "../support/market.js"

const isProblem = (body: { type?: unknown; title?: unknown; status?: unknown; detail?: unknown; code?: unknown }) =>
  typeof body.type === "string" &&
  typeof body.title === "string" &&
  typeof body.status === "number" &&
  typeof body.detail === "string" &&
  typeof body.code === "string"

const count = (query: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql.unsafe<{ n: number }>(query)
    return Number(rows[0]?.n ?? 0)
  }).pipe(Effect.orDie)

const balanceOf = (address: string, asset = "COIN") =>
  Effect.flatMap(Ledger, (ledger) => ledger.balance(walletAccount(address), asset))

// The live clock: signatures carry real timestamps and the rate-limit reset is real epoch seconds.
layer(HttpTest(), { timeout: "60 seconds", excludeTestServices: true })("the marketplace API (/api)", (it) => {
  it.effect("lists agents oldest first with the seed's fields, and answers one agent's detail", () =>
    Effect.gen(function* () {
      yield* launchAgent("LISTA", { burnRateHourly: "2" })
      yield* launchAgent("LISTB")
      yield* (yield* Ledger).mint("agent:LISTA", toUnits("10"), "funding")
      const list = yield* call("GET", "/api/agents")
      assert.strictEqual(list.status, 200)
      const tickers = list.body.map((a: { ticker: string }) => a.ticker)
      assert.isBelow(tickers.indexOf("LISTA"), tickers.indexOf("LISTB"))
      const summary = list.body.find((a: { ticker: string }) => a.ticker === "LISTA")
      assert.deepStrictEqual(Object.keys(summary).sort(), [
        "balance",
        "balance_str",
        "burn_rate_hourly",
        "burn_rate_hourly_str",
        "instance_id",
        "name",
        "status",
        "ticker",
        "total_costs",
        "total_costs_str",
        "total_revenue",
        "total_revenue_str"
      ])
      assert.strictEqual(summary.status, "running")
      assert.strictEqual(summary.balance, 10)
      const detail = yield* call("GET", "/api/agents/LISTA")
      assert.strictEqual(detail.status, 200)
      assert.strictEqual(detail.body.runway_hours, 5) // 10 coin at 2 per hour
      assert.strictEqual(detail.body.description, "The LISTA test agent")
      assert.match(detail.body.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      assert.strictEqual(detail.body.runway_infinite, false)
      const idle = (yield* call("GET", "/api/agents/LISTB")).body // burns nothing: the sentinel, flagged
      assert.strictEqual(idle.runway_hours, Number.MAX_VALUE)
      assert.strictEqual(idle.runway_infinite, true)
      const missing = yield* call("GET", "/api/agents/NOSUCH")
      assert.strictEqual(missing.status, 404)
      assert.strictEqual(missing.body.code, "AGENT_NOT_FOUND")
      assert.isTrue(isProblem(missing.body))
    })
  )

  it.effect("pages lists with limit and offset; an out-of-range or non-integer limit is a 400", () =>
    Effect.gen(function* () {
      const all = (yield* call("GET", "/api/agents?limit=500")).body
      const page = (yield* call("GET", "/api/agents?limit=1&offset=1")).body
      assert.strictEqual(page.length, 1)
      assert.strictEqual(page[0].ticker, all[1].ticker)
      for (const bad of ["0", "501", "1.5", "ten"]) {
        const answer = yield* call("GET", `/api/agents?limit=${bad}`)
        assert.strictEqual(answer.status, 400, bad)
        assert.strictEqual(answer.body.code, "VALIDATION_FAILED")
      }
      assert.strictEqual((yield* call("GET", "/api/tokens?limit=501")).status, 400)
      assert.strictEqual((yield* call("GET", "/api/chat?limit=201")).status, 400)
      assert.strictEqual((yield* call("GET", "/api/coin/history?limit=1001")).status, 400)
      const badPeriod = yield* call("GET", "/api/coin/history?period=2d&sampling=x")
      assert.strictEqual(badPeriod.status, 400)
      // Each invalid field once, a union's members in one message.
      assert.deepStrictEqual(badPeriod.body.errors, [
        { path: "period", message: 'Expected one of "1h", "24h", "7d", "30d", "all"' },
        { path: "sampling", message: 'Expected one of "even", "none"' }
      ])
    })
  )

  it.effect("a buy and a sell answer the seed's results, exactly as the journal recorded them", () =>
    Effect.gen(function* () {
      yield* launchAgent("TRADE")
      const w = yield* fundedWallet(1)
      const buy = yield* call("POST", "/api/tokens/TRADE/buy", {
        bearer: w.key,
        body: { user_id: w.address, amount: 10 }
      })
      assert.strictEqual(buy.status, 200)
      assert.deepStrictEqual(Object.keys(buy.body).sort(), [
        "coin_spent",
        "coin_spent_str",
        "fee",
        "fee_str",
        "new_balance",
        "new_balance_str",
        "partial",
        "price_per_token",
        "price_per_token_str",
        "success",
        "tokens_received",
        "tokens_received_str"
      ])
      assert.strictEqual(buy.body.success, true)
      assert.strictEqual(buy.body.coin_spent, 10)
      assert.strictEqual(buy.body.partial, false)
      assert.strictEqual(buy.body.fee, 0.1)
      assert.strictEqual(buy.body.new_balance, 990)
      const held = yield* balanceOf(w.address, "TRADE")
      assert.strictEqual(toUnits(buy.body.tokens_received), held)
      // The unit price applied is the coin that went into the curve per token received.
      assert.approximately(buy.body.price_per_token, 9.9 / buy.body.tokens_received, 1e-15)
      const sell = yield* call("POST", "/api/tokens/TRADE/sell", {
        bearer: w.key,
        body: { user_id: w.address, amount: buy.body.tokens_received }
      })
      assert.strictEqual(sell.status, 200)
      assert.deepStrictEqual(Object.keys(sell.body).sort(), [
        "coin_received",
        "coin_received_str",
        "fee",
        "fee_str",
        "new_balance",
        "new_balance_str",
        "partial",
        "price_per_token",
        "price_per_token_str",
        "success",
        "tokens_sold",
        "tokens_sold_str"
      ])
      assert.strictEqual(sell.body.tokens_sold, buy.body.tokens_received)
      assert.strictEqual(sell.body.partial, false)
      assert.strictEqual(toUnits(sell.body.new_balance), yield* balanceOf(w.address))
      assert.isBelow(sell.body.coin_received, 9.9) // a round trip never profits: the fee and rounding stay behind
      const agent = (yield* call("GET", "/api/agents/TRADE")).body
      // MARKET_AGENT_FEE_SHARE_BPS defaults to 50 % of every fee.
      assert.approximately(agent.total_revenue, (buy.body.fee + sell.body.fee) / 2, 1e-9)
      const token = (yield* call("GET", "/api/tokens")).body.find((t: { ticker: string }) => t.ticker === "TRADE")
      assert.approximately(token.volume_24h, 10 + sell.body.coin_received, 1e-9)
      assert.approximately(token.price_change_24h, 0, 0.01) // sold back: the price is at its launch level again
      assert.strictEqual(token.market_cap, 0) // everything bought was sold back: nothing circulates
      assert.isTrue((yield* (yield* Ledger).audit()).ok)
    })
  )

  it.effect("tokens are listed by market cap, largest first", () =>
    Effect.gen(function* () {
      yield* launchAgent("CAPLO")
      yield* launchAgent("CAPHI")
      const w = yield* fundedWallet(2)
      yield* call("POST", "/api/tokens/CAPLO/buy", { bearer: w.key, body: { user_id: w.address, amount: 1 } })
      yield* call("POST", "/api/tokens/CAPHI/buy", { bearer: w.key, body: { user_id: w.address, amount: 30 } })
      const caps = (yield* call("GET", "/api/tokens")).body.map((t: { market_cap: number }) => t.market_cap)
      assert.deepStrictEqual(
        caps,
        [...caps].sort((a: number, b: number) => b - a)
      )
    })
  )

  it.effect("trading needs the wallet's own credentials: none is 401, another wallet is 403 WALLET_MISMATCH", () =>
    Effect.gen(function* () {
      yield* launchAgent("AUTHX")
      const alice = yield* fundedWallet(3)
      const bob = yield* fundedWallet(4)
      const anonymous = yield* call("POST", "/api/tokens/AUTHX/buy", { body: { user_id: alice.address, amount: 1 } })
      assert.strictEqual(anonymous.status, 401)
      assert.strictEqual(anonymous.body.code, "UNAUTHORIZED")
      const wrong = yield* call("POST", "/api/tokens/AUTHX/buy", {
        bearer: bob.key,
        body: { user_id: alice.address, amount: 1 }
      })
      assert.strictEqual(wrong.status, 403)
      assert.strictEqual(wrong.body.code, "WALLET_MISMATCH")
      const garbage = yield* call("POST", "/api/tokens/AUTHX/buy", {
        bearer: "keel_not-a-real-key-at-all",
        body: { user_id: alice.address, amount: 1 }
      })
      assert.strictEqual(garbage.status, 401)
      const balance = yield* call("GET", `/api/coin/balance?user_id=${alice.address}`, { bearer: alice.key })
      assert.deepStrictEqual(balance.body, { balance: 1000, balance_str: "1000" })
      assert.strictEqual((yield* call("GET", `/api/coin/balance?user_id=${alice.address}`)).status, 401)
      assert.strictEqual(
        (yield* call("GET", `/api/coin/balance?user_id=${alice.address}`, { bearer: bob.key })).body.code,
        "WALLET_MISMATCH"
      )
      assert.strictEqual(yield* balanceOf(alice.address), toUnits("1000"))
    })
  )

  it.effect("a revoked API key is refused at once", () =>
    Effect.gen(function* () {
      yield* launchAgent("REVOK")
      const w = yield* fundedWallet(5)
      const order = { bearer: w.key, body: { user_id: w.address, amount: 1 } }
      assert.strictEqual((yield* call("POST", "/api/tokens/REVOK/buy", order)).status, 200)
      const keys = yield* ApiKeys
      // Listed in EIP-55 form, like every address Keel answers.
      const mine = (yield* keys.list).find((k) => k.wallet === w.address)
      assert.isDefined(mine)
      assert.strictEqual(mine?.prefix, w.key.slice(0, 12))
      yield* keys.revoke(mine?.prefix ?? "")
      const refused = yield* call("POST", "/api/tokens/REVOK/buy", order)
      assert.strictEqual(refused.status, 401)
      assert.match(refused.body.detail, /revoked/)
    })
  )

  it.effect(
    "wallet signatures: a good one trades; wrong address, replayed nonce, stale timestamp, tampered body are 401",
    () =>
      Effect.gen(function* () {
        yield* launchAgent("SIGN")
        const signer = testWallet(6)
        yield* (yield* Ledger).mint(walletAccount(signer.address), toUnits("100"), "test funding")
        const path = "/api/tokens/SIGN/buy"
        const body = JSON.stringify({ user_id: signer.address, amount: 2 })
        const send = (headers: Record<string, string>, text = body) =>
          call("POST", path, { headers: { ...headers, "content-type": "application/json" }, body: JSON.parse(text) })

        const good = signRequest(signer.privateKey, { method: "POST", pathWithQuery: path, body })
        const ok = yield* send(good)
        assert.strictEqual(ok.status, 200)
        assert.strictEqual(ok.body.new_balance, 98)

        const replay = yield* send(good)
        assert.strictEqual(replay.status, 401)
        assert.match(replay.body.detail, /nonce/i)

        const other = testWallet(7)
        const claimed = { ...signRequest(other.privateKey, { method: "POST", pathWithQuery: path, body }) }
        claimed["x-wallet-address"] = checksumAddress(signer.address) // signed by another key
        const impostor = yield* send(claimed)
        assert.strictEqual(impostor.status, 401)

        const stale = signRequest(signer.privateKey, {
          method: "POST",
          pathWithQuery: path,
          body,
          timestamp: Math.floor(Date.now() / 1000) - 301
        })
        assert.strictEqual((yield* send(stale)).status, 401)

        const signedSmall = signRequest(signer.privateKey, { method: "POST", pathWithQuery: path, body })
        const tampered = yield* send(signedSmall, JSON.stringify({ user_id: signer.address, amount: 50 }))
        assert.strictEqual(tampered.status, 401)

        const lowercase = signRequest(signer.privateKey, { method: "POST", pathWithQuery: path, body })
        lowercase["x-wallet-address"] = signer.address.toLowerCase() // addresses compare case-insensitively
        assert.strictEqual((yield* send(lowercase)).status, 200)
        assert.strictEqual(yield* balanceOf(signer.address), toUnits("96"))
        assert.strictEqual(yield* count("SELECT count(*) AS n FROM market_trades WHERE ticker = 'SIGN'"), 2)
      })
  )

  it.effect("slippage, overdrafts and dust fail with their codes and change nothing", () =>
    Effect.gen(function* () {
      yield* launchAgent("GUARD")
      const w = yield* fundedWallet(8, "5")
      const before = yield* count("SELECT count(*) AS n FROM ledger_entries")
      const slip = yield* call("POST", "/api/tokens/GUARD/buy", {
        bearer: w.key,
        body: { user_id: w.address, amount: 1, min_tokens_out: 1e15 }
      })
      assert.strictEqual(slip.status, 409)
      assert.strictEqual(slip.body.code, "SLIPPAGE_EXCEEDED")
      const broke = yield* call("POST", "/api/tokens/GUARD/buy", {
        bearer: w.key,
        body: { user_id: w.address, amount: 6 }
      })
      assert.strictEqual(broke.status, 422)
      assert.strictEqual(broke.body.code, "INSUFFICIENT_FUNDS")
      const noTokens = yield* call("POST", "/api/tokens/GUARD/sell", {
        bearer: w.key,
        body: { user_id: w.address, amount: 1000 }
      })
      assert.strictEqual(noTokens.status, 422)
      assert.strictEqual(noTokens.body.code, "INSUFFICIENT_TOKENS")
      const bought = yield* call("POST", "/api/tokens/GUARD/buy", {
        bearer: w.key,
        body: { user_id: w.address, amount: 1 }
      })
      const sellSlip = yield* call("POST", "/api/tokens/GUARD/sell", {
        bearer: w.key,
        body: { user_id: w.address, amount: bought.body.tokens_received, min_coin_out: 1 }
      })
      assert.strictEqual(sellSlip.status, 409)
      const zero = yield* call("POST", "/api/tokens/GUARD/buy", {
        bearer: w.key,
        body: { user_id: w.address, amount: 0 }
      })
      assert.strictEqual(zero.status, 400)
      const unknown = yield* call("POST", "/api/tokens/NOPE/buy", {
        bearer: w.key,
        body: { user_id: w.address, amount: 1 }
      })
      assert.strictEqual(unknown.status, 404)
      assert.strictEqual(yield* count("SELECT count(*) AS n FROM ledger_entries"), before + 1) // only the good buy
      assert.strictEqual(yield* balanceOf(w.address), toUnits("4"))
    })
  )

  it.effect("an Idempotency-Key replays the first result without trading twice; reused with another body is 422", () =>
    Effect.gen(function* () {
      yield* launchAgent("IDEM")
      const w = yield* fundedWallet(9)
      const order = (amount: number) => ({
        bearer: w.key,
        headers: { "idempotency-key": "order-42" },
        body: { user_id: w.address, amount }
      })
      const first = yield* call("POST", "/api/tokens/IDEM/buy", order(3))
      const retried = yield* call("POST", "/api/tokens/IDEM/buy", order(3))
      assert.strictEqual(first.status, 200)
      assert.strictEqual(retried.status, 200)
      assert.deepStrictEqual(retried.body, first.body)
      assert.strictEqual(retried.headers["idempotent-replayed"], "true")
      assert.strictEqual(yield* count("SELECT count(*) AS n FROM market_trades WHERE ticker = 'IDEM'"), 1)
      // The same number written another way (a client that re-serialises on retry) is the same request.
      for (const written of ["3.0", "3e0", "0.3E1", "30e-1", "3.000000000000"]) {
        const again = yield* call("POST", "/api/tokens/IDEM/buy", {
          ...order(3),
          rawBody: `{"user_id":"${w.address}","amount":${written}}`
        })
        assert.strictEqual(again.status, 200, written)
        assert.deepStrictEqual(again.body, first.body, written)
      }
      assert.strictEqual(yield* count("SELECT count(*) AS n FROM market_trades WHERE ticker = 'IDEM'"), 1)
      // Two Idempotency-Key headers (Node joins them into "order-42, other", a new key): refused, never traded.
      const port = yield* serverPort
      const doubled = yield* Effect.promise(
        () =>
          new Promise<{ status: number; body: string }>((resolve, reject) => {
            const body = JSON.stringify({ user_id: w.address, amount: 3 })
            const req = http.request(
              {
                host: "127.0.0.1",
                port,
                method: "POST",
                path: "/api/tokens/IDEM/buy",
                agent: false,
                headers: {
                  authorization: `Bearer ${w.key}`,
                  "content-type": "application/json",
                  "idempotency-key": ["order-42", "other"]
                }
              },
              (res) => {
                let text = ""
                res.on("data", (chunk) => {
                  text += chunk
                })
                res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }))
              }
            )
            req.on("error", reject)
            req.end(body)
          })
      )
      assert.strictEqual(doubled.status, 400)
      assert.deepInclude(JSON.parse(doubled.body), { code: "VALIDATION_FAILED" })
      assert.include(JSON.parse(doubled.body).detail, "idempotency-key: must be sent once")
      assert.strictEqual(yield* count("SELECT count(*) AS n FROM market_trades WHERE ticker = 'IDEM'"), 1)
      // A proxy that merges the two writes the same shape into one line: refused the same way.
      const merged = yield* call("POST", "/api/tokens/IDEM/buy", {
        ...order(3),
        headers: { "idempotency-key": "order-42, other" }
      })
      assert.strictEqual(merged.status, 400)
      // One header whose key holds a comma (no space after it) is just a key.
      const comma = yield* call("POST", "/api/tokens/IDEM/buy", { ...order(1), headers: { "idempotency-key": "a,b" } })
      assert.strictEqual(comma.status, 200)
      assert.strictEqual(yield* count("SELECT count(*) AS n FROM market_trades WHERE ticker = 'IDEM'"), 2)
      const reused = yield* call("POST", "/api/tokens/IDEM/buy", order(4))
      assert.strictEqual(reused.status, 422)
      assert.strictEqual(reused.body.code, "IDEMPOTENCY_KEY_REUSED")
      // The 3-coin order once, and the 1-coin order under the key "a,b".
      assert.strictEqual(yield* balanceOf(w.address), toUnits("996"))
    })
  )

  it.effect("status drives trading: paused and retired tokens answer 409 AGENT_NOT_TRADING; resumed ones trade", () =>
    Effect.gen(function* () {
      yield* launchAgent("STAT")
      const w = yield* fundedWallet(10)
      const agents = yield* Agents
      const buy = call("POST", "/api/tokens/STAT/buy", { bearer: w.key, body: { user_id: w.address, amount: 1 } })
      yield* agents.transition("STAT", "pause")
      const paused = yield* buy
      assert.strictEqual(paused.status, 409)
      assert.strictEqual(paused.body.code, "AGENT_NOT_TRADING")
      assert.strictEqual((yield* call("GET", "/api/agents/STAT")).body.status, "paused")
      yield* agents.transition("STAT", "resume")
      assert.strictEqual((yield* buy).status, 200)
      yield* agents.transition("STAT", "retire")
      assert.strictEqual((yield* buy).body.code, "AGENT_NOT_TRADING")
      const again = yield* Effect.flip(agents.transition("STAT", "resume"))
      assert.strictEqual(again._tag, "InvalidTransition")
      assert.strictEqual(yield* balanceOf(w.address), toUnits("999"))
    })
  )

  it.effect("chat: an agent posts with its key (201); the list is newest first and pages back with before", () =>
    Effect.gen(function* () {
      const key = yield* launchAgent("TALK", { name: "Talker" })
      const w = yield* fundedWallet(11)
      const posted = yield* call("POST", "/api/chat", { bearer: key, body: { message: "hello", message_type: "chat" } })
      assert.strictEqual(posted.status, 201)
      assert.strictEqual(posted.body.sender_ticker, "TALK")
      assert.strictEqual(posted.body.sender_name, "Talker")
      assert.strictEqual(posted.body.message, "hello")
      assert.strictEqual(posted.body.message_type, "chat")
      const second = yield* call("POST", "/api/chat", { bearer: key, body: { message: "again", message_type: "chat" } })
      const latest = (yield* call("GET", "/api/chat?limit=2")).body
      assert.deepStrictEqual(
        latest.map((m: { id: string }) => m.id),
        [second.body.id, posted.body.id]
      )
      const older = (yield* call("GET", `/api/chat?limit=1&before=${posted.body.id}`)).body
      assert.isBelow(Number(older[0].id), Number(posted.body.id))
      for (const body of [
        { message: "x", message_type: "system" },
        { message: "", message_type: "chat" },
        { message: "y".repeat(2001), message_type: "chat" },
        { message: "😀".repeat(2001), message_type: "chat" },
        { message: "a\ud800b", message_type: "chat" },
        { message: "\udc00", message_type: "chat" }
      ]) {
        const refused = yield* call("POST", "/api/chat", { bearer: key, body })
        assert.strictEqual(refused.status, 400)
      }
      // Characters as people count them: 2000 emoji (4000 UTF-16 units) are 2000 characters, stored as sent.
      const emoji = yield* call("POST", "/api/chat", {
        bearer: key,
        body: { message: "😀".repeat(2000), message_type: "chat" }
      })
      assert.strictEqual(emoji.status, 201)
      assert.strictEqual(emoji.body.message, "😀".repeat(2000))
      assert.strictEqual(
        (yield* call("POST", "/api/chat", { body: { message: "hi", message_type: "chat" } })).status,
        401
      )
      const walletPost = yield* call("POST", "/api/chat", {
        bearer: w.key,
        body: { message: "hi", message_type: "chat" }
      })
      assert.strictEqual(walletPost.status, 403)
      assert.strictEqual(walletPost.body.code, "AGENT_KEY_REQUIRED")
      yield* (yield* Agents).transition("TALK", "retire")
      const retired = yield* call("POST", "/api/chat", { bearer: key, body: { message: "bye", message_type: "chat" } })
      assert.strictEqual(retired.status, 403)
      assert.strictEqual(retired.body.code, "AGENT_CANNOT_CHAT")
      const system = (yield* call("GET", "/api/chat?limit=1")).body[0]
      assert.strictEqual(system.message_type, "system") // the platform announced the retirement
    })
  )

  it.effect("a trade of at least MARKET_CHAT_TRADE_MIN coin gets a trade line in the chat", () =>
    Effect.gen(function* () {
      yield* launchAgent("LOUD")
      const w = yield* fundedWallet(12)
      yield* call("POST", "/api/tokens/LOUD/buy", { bearer: w.key, body: { user_id: w.address, amount: 1 } })
      const quiet = (yield* call("GET", "/api/chat?limit=1")).body[0]
      assert.notStrictEqual(quiet.message_type, "trade")
      yield* call("POST", "/api/tokens/LOUD/buy", { bearer: w.key, body: { user_id: w.address, amount: 10 } })
      const line = (yield* call("GET", "/api/chat?limit=1")).body[0]
      assert.strictEqual(line.message_type, "trade")
      assert.strictEqual(line.sender_ticker, "LOUD")
      assert.match(line.message, /bought .* LOUD for 10 coin/)
    })
  )

  it.effect("coin history: the operator's price, supply = minted - burned, periods and even down-sampling", () =>
    Effect.gen(function* () {
      const coin = yield* CoinHistory
      yield* coin.setPrice(toUnits("2"))
      for (let i = 0; i < 9; i++) yield* coin.sample
      yield* coin.setPrice(toUnits("3"))
      const history = yield* call("GET", "/api/coin/history?period=1h&limit=4")
      assert.strictEqual(history.status, 200)
      assert.strictEqual(history.body.current.price, 3)
      const ledger = yield* Ledger
      const supply = (yield* ledger.audit()).coinSupply
      assert.strictEqual(toUnits(history.body.current.supply), supply)
      assert.approximately(history.body.current.market_cap, 3 * history.body.current.supply, 1e-6)
      assert.strictEqual(history.body.history.length, 4)
      assert.strictEqual(history.body.history[0].price, 2)
      assert.strictEqual(history.body.history[3].price, 3) // first and last kept
      assert.strictEqual(history.body.price_change_percent, 50)
      const stamps = history.body.history.map((p: { timestamp: string }) => Date.parse(p.timestamp))
      assert.deepStrictEqual(stamps, [...stamps].sort())
      const byDefault = yield* call("GET", "/api/coin/history")
      assert.strictEqual(byDefault.body.history.length, 11)
    })
  )

  it.effect("rate-limit headers are on every marketplace answer, errors included", () =>
    Effect.gen(function* () {
      for (const answer of [
        yield* call("GET", "/api/agents"),
        yield* call("GET", "/api/agents/NOPE"),
        yield* call("GET", "/api/agents?limit=0"),
        yield* call("POST", "/api/tokens/NOPE/buy", { body: { user_id: testWallet(1).address, amount: 1 } })
      ]) {
        assert.match(answer.headers["x-ratelimit-limit"] ?? "", /^\d+$/)
        assert.match(answer.headers["x-ratelimit-remaining"] ?? "", /^\d+$/)
        const reset = Number(answer.headers["x-ratelimit-reset"])
        assert.isAtLeast(reset, Math.floor(Date.now() / 1000))
        assert.isAtMost(reset, Math.ceil(Date.now() / 1000) + 61)
      }
    })
  )

  it.effect("/api/stream sends trades and chat as they commit, and resumes after Last-Event-ID", () =>
    Effect.gen(function* () {
      const key = yield* launchAgent("LIVE")
      const w = yield* fundedWallet(13)
      const port = yield* serverPort
      const live = yield* readStream(port, {
        done: (text) => text.includes("event: trade") && text.includes("streamed hello"),
        ready: Effect.gen(function* () {
          yield* call("POST", "/api/tokens/LIVE/buy", { bearer: w.key, body: { user_id: w.address, amount: 1 } })
          yield* call("POST", "/api/chat", { bearer: key, body: { message: "streamed hello", message_type: "chat" } })
        })
      })
      assert.strictEqual(live.status, 200)
      const ids = [...live.text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]))
      assert.isAtLeast(ids.length, 2)
      const tradeData = /event: trade\ndata: (.*)\n/.exec(live.text)?.[1] ?? "{}"
      assert.strictEqual(JSON.parse(tradeData).ticker, "LIVE")
      const resumed = yield* readStream(port, {
        lastEventId: ids[0]! - 1,
        done: (text) => text.includes("streamed hello")
      })
      assert.match(resumed.text, new RegExp(`^id: ${ids[0]}$`, "m"))
      assert.include(resumed.text, "streamed hello")
    })
  )
})
