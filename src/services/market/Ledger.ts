import { SqlClient } from "@effect/sql"
import { Clock, Effect, Schema } from "effect"
import { InsufficientFunds } from "../../contracts/market/Errors.js"
import { type Program, placeholders, SqlDirect, type Statements } from "../platform/SqlDirect.js"
import { orDieSql } from "../platform/SqlEdge.js"
import { refuse } from "../platform/SyncSql.js"
import { MAX_LEG, unitsText } from "./Units.js"
import { checksumAddress } from "./WalletSignature.js"

/** The platform coin; a token's asset is its ticker. */
export const COIN = "COIN"
/** Where minted value comes from and burned value goes: its balance is minus the supply. */
export const ISSUANCE = "system:issuance"

export interface Leg {
  readonly account: string
  readonly asset: string
  /** Nano-units; positive credits the account, negative debits it. */
  readonly amount: bigint
}

/** An account as a client sees it: a wallet's address in EIP-55 form (stored lowercase). */
export const displayAccount = (account: string) =>
  account.startsWith("wallet:") ? `wallet:${checksumAddress(account.slice("wallet:".length))}` : account

export class UnbalancedEntry extends Schema.TaggedError<UnbalancedEntry>()("UnbalancedEntry", {
  asset: Schema.String,
  detail: Schema.String
}) {}

export interface AuditReport {
  readonly ok: boolean
  readonly entries: number
  readonly coinSupply: bigint
  readonly problems: ReadonlyArray<string>
}

/** Integers come back as bigint: balances above 2^53 nano-units (9 million coins) stay exact. */
export const exactIntegers = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.provideService(effect, SqlClient.SafeIntegers, true)

/** System accounts may go negative (issuance is minus the supply); everyone else never does. */
const mayGoNegative = (account: string) => account.startsWith("system:")

export interface Posted {
  readonly id: number
  /** The balance of `account` in `asset` after this entry (only for pairs the entry touched). */
  readonly balanceAfter: (account: string, asset: string) => bigint
}

const overdraft = (leg: { readonly account: string; readonly asset: string }) =>
  new InsufficientFunds({
    code: leg.asset === COIN ? "INSUFFICIENT_FUNDS" : "INSUFFICIENT_TOKENS",
    account: displayAccount(leg.account),
    asset: leg.asset,
    detail: `${displayAccount(leg.account)} holds too little ${leg.asset}`
  })

/** `(account, asset)` order: the one order every entry takes its balance rows' locks in on PostgreSQL. */
const byAccountAsset = (a: Leg, b: Leg) =>
  a.account < b.account ? -1 : a.account > b.account ? 1 : a.asset < b.asset ? -1 : a.asset > b.asset ? 1 : 0

/**
 * Appends one entry and moves the balances it projects, on `db` inside its transaction (which must roll back
 * when this throws). Refuses (`refuse`) an unbalanced entry or an overdraft. Answers the entry id and the new
 * balance of every (account, asset) the entry touched. A statement program (docs/database.md).
 */
export function* postEntry(
  db: Statements,
  kind: string,
  reference: string,
  legs: ReadonlyArray<Leg>,
  now: number
): Program<Posted> {
  const sums = new Map<string, bigint>()
  for (const leg of legs) sums.set(leg.asset, (sums.get(leg.asset) ?? 0n) + leg.amount)
  for (const [asset, sum] of sums) {
    if (sum !== 0n) refuse(new UnbalancedEntry({ asset, detail: `legs of ${asset} sum to ${sum}, not 0` }))
  }
  const net = new Map<string, Leg>()
  for (const leg of legs) {
    const key = `${leg.account}\u0000${leg.asset}`
    net.set(key, { ...leg, amount: (net.get(key)?.amount ?? 0n) + leg.amount })
  }
  const moves = [...net.values()]
  // SQLite holds 64-bit integers; no account can hold 2^62 nano-units (supplies are far smaller), so a leg
  // that large is an overdraft of its debit side, refused here before any statement sees it.
  const huge = moves.find((l) => l.amount > MAX_LEG || l.amount < -MAX_LEG)
  if (huge !== undefined) refuse(overdraft(moves.find((l) => l.amount < 0n && !mayGoNegative(l.account)) ?? huge))
  // On PostgreSQL each upserted row stays locked until commit: every entry takes its rows in one global order, so
  // two entries (two trades on two tickers both crediting the treasury) wait for each other instead of
  // deadlocking. SQLite has one writer at a time and keeps the entry's own order.
  const upserts = db.dialect === "pg" ? [...moves].sort(byAccountAsset) : moves
  // One upsert for every balance; an overdraft shows in what it returns, and the caller's rollback undoes it.
  const moved = yield* db.all<{ account: string; asset: string; balance: bigint }>(
    `INSERT INTO ledger_balances (account, asset, balance) VALUES ${placeholders(3, upserts.length)}
    ON CONFLICT (account, asset) DO UPDATE SET balance = ledger_balances.balance + excluded.balance
    RETURNING account, asset, balance`,
    upserts.flatMap((l) => [l.account, l.asset, l.amount])
  )
  const balances = new Map<string, bigint>()
  for (const row of moved) balances.set(`${row.account}\u0000${row.asset}`, BigInt(row.balance))
  // The first overdraft in the entry's own order is the one refused, whatever order the rows came back in.
  for (const move of moves) {
    const after = balances.get(`${move.account}\u0000${move.asset}`) ?? 0n
    if (after < 0n && !mayGoNegative(move.account)) refuse(overdraft(move))
  }
  const [entry] = yield* db.all<{ id: bigint }>(
    "INSERT INTO ledger_entries (kind, reference, created_at) VALUES (?, ?, ?) RETURNING id",
    [kind, reference, now]
  )
  const id = Number(entry!.id)
  yield* db.run(
    `INSERT INTO ledger_legs (entry_id, account, asset, amount) VALUES ${placeholders(4, legs.length)}`,
    legs.flatMap((l) => [id, l.account, l.asset, l.amount])
  )
  return { id, balanceAfter: (account, asset) => balances.get(`${account}\u0000${asset}`) ?? 0n }
}

/**
 * The double-entry ledger: every balance change is an entry whose legs sum to zero per asset,
 * appended to the journal in the same transaction that updates the balances it projects.
 */
export class Ledger extends Effect.Service<Ledger>()("market/Ledger", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const direct = yield* SqlDirect

    const balance = (account: string, asset: string) =>
      sql<{ balance: number | bigint | string }>`
        SELECT balance FROM ledger_balances WHERE account = ${account} AND asset = ${asset}`.pipe(
        Effect.map((rows) => BigInt(rows[0]?.balance ?? 0)),
        Effect.orDie,
        exactIntegers
      )

    /**
     * Appends one entry and moves the balances it projects: a savepoint of the caller's transaction, or a
     * transaction of its own. Refuses an unbalanced entry or an overdraft (nothing of the entry stays).
     */
    const postWithin = (kind: string, reference: string, legs: ReadonlyArray<Leg>) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        direct.transactionProgram<Posted, InsufficientFunds | UnbalancedEntry>((db) =>
          postEntry(db, kind, reference, legs, now)
        )
      )

    /** Posts one entry atomically (its own transaction, or a savepoint of the caller's); on failure nothing changes. */
    const post = (kind: string, reference: string, legs: ReadonlyArray<Leg>) =>
      postWithin(kind, reference, legs).pipe(
        Effect.map((posted) => posted.id),
        orDieSql
      )

    /**
     * Coin into `to`. No balance, and not the supply, may pass 2^62 nano-units (SQLite's integers would turn to
     * floating point past 2^63, and no leg is admitted that large): such a mint is refused, nothing moves.
     */
    const mint = (to: string, amount: bigint, reason: string) =>
      Effect.gen(function* () {
        const held = yield* balance(to, COIN)
        const supply = -(yield* balance(ISSUANCE, COIN))
        if (amount > MAX_LEG || held + amount > MAX_LEG || supply + amount > MAX_LEG)
          return yield* new UnbalancedEntry({
            asset: COIN,
            detail: `minting ${unitsText(amount)} would put more than ${unitsText(MAX_LEG)} coin in ${displayAccount(to)} or in the supply, the most the ledger holds`
          })
        return yield* post("mint", reason, [
          { account: ISSUANCE, asset: COIN, amount: -amount },
          { account: to, asset: COIN, amount }
        ])
      })

    const burn = (from: string, amount: bigint, reason: string) =>
      post("burn", reason, [
        { account: from, asset: COIN, amount: -amount },
        { account: ISSUANCE, asset: COIN, amount }
      ])

    /**
     * Recomputes every balance from the journal and checks: each entry sums to zero per asset, each
     * stored balance equals its projection, no ordinary account is negative, and the coin held outside
     * issuance equals minted minus burned.
     */
    const audit = Effect.fn("Ledger.audit")(
      function* () {
        const problems: Array<string> = []
        const unbalanced = yield* sql<{ entry_id: number; asset: string; total: number | bigint }>`
        SELECT entry_id, asset, sum(amount) AS total FROM ledger_legs GROUP BY entry_id, asset HAVING sum(amount) <> 0`
        for (const row of unbalanced)
          problems.push(`entry ${row.entry_id} does not balance in ${row.asset} (${row.total})`)
        const projected = yield* sql<{ account: string; asset: string; total: number | bigint }>`
        SELECT account, asset, sum(amount) AS total FROM ledger_legs GROUP BY account, asset`
        const stored = yield* sql<{ account: string; asset: string; balance: number | bigint }>`
        SELECT account, asset, balance FROM ledger_balances`
        const key = (account: string, asset: string) => `${account}\u0000${asset}`
        const projection = new Map(projected.map((r) => [key(r.account, r.asset), BigInt(r.total)]))
        for (const row of stored) {
          const expected = projection.get(key(row.account, row.asset)) ?? 0n
          if (BigInt(row.balance) !== expected) {
            problems.push(`${row.account} ${row.asset}: balance ${row.balance} but the journal says ${expected}`)
          }
          if (BigInt(row.balance) < 0n && !mayGoNegative(row.account))
            problems.push(`${row.account} ${row.asset} is negative`)
          projection.delete(key(row.account, row.asset))
        }
        for (const [k, v] of projection)
          if (v !== 0n) problems.push(`${k.replace("\u0000", " ")}: journal total ${v} has no balance row`)
        const nonZero = yield* sql<{ asset: string; total: number | bigint }>`
        SELECT asset, sum(balance) AS total FROM ledger_balances GROUP BY asset HAVING sum(balance) <> 0`
        for (const row of nonZero) problems.push(`${row.asset} does not sum to zero across accounts (${row.total})`)
        const supply = -(yield* balance(ISSUANCE, COIN))
        const held = yield* sql<{ total: number | bigint | null }>`
        SELECT sum(balance) AS total FROM ledger_balances WHERE asset = ${COIN} AND account <> ${ISSUANCE}`
        if (BigInt(held[0]?.total ?? 0) !== supply)
          problems.push(`coin held ${held[0]?.total} differs from supply ${supply}`)
        const entries = yield* sql<{ n: number }>`SELECT count(*) AS n FROM ledger_entries`
        return {
          ok: problems.length === 0,
          entries: Number(entries[0]?.n ?? 0),
          coinSupply: supply,
          problems
        } satisfies AuditReport
      },
      Effect.orDie,
      exactIntegers
    )

    return { post, postWithin, mint, burn, balance, audit } as const
  }),
  dependencies: [SqlDirect.Default]
}) {}
