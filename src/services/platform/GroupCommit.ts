import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { type Cause, Effect, Exit } from "effect"
import { makeGroupCommit } from "./hot/GroupCommit.js"
import { type DirectStatements, SqlDirect } from "./SqlDirect.js"

/** A write: its SQL, run inside the group's transaction (it may run twice: see `commitGroup`). */
type Write = (db: DirectStatements) => Effect.Effect<unknown, unknown>

/** Every write of a group failed with `cause` (the group's transaction did not commit: none of it happened). */
const failAll = (
  group: ReadonlyArray<Write>,
  cause: Cause.Cause<unknown>
): ReadonlyArray<Exit.Exit<unknown, unknown>> => group.map(() => Exit.failCause(cause))

/**
 * Group commit for small hot-path writes (an assignment and its exposure): the writes submitted while the
 * event loop was busy are applied in **one** transaction, and every caller is answered once that transaction
 * has committed — with its own result, or its own failure (a failed write is undone alone and does not fail
 * the others: see `commitGroup`). A group forms without a timer: the first write of a group waits one turn
 * of the event loop (`setImmediate`), during which the server reads the requests its sockets hold and they
 * join. A commit that fails fails the whole group (none of it happened).
 */
export class GroupCommit extends Effect.Service<GroupCommit>()("platform/GroupCommit", {
  scoped: Effect.gen(function* () {
    const direct = yield* SqlDirect

    /** Each write in its own savepoint of the group's transaction: a failed write undoes only itself. */
    const isolated = (group: ReadonlyArray<Write>) =>
      direct
        .transaction(Effect.forEach(group, (body) => Effect.exit(direct.transaction(body))))
        .pipe(Effect.catchAllCause((cause) => Effect.succeed(failAll(group, cause))))

    /**
     * The common case first: every write straight into the group's transaction, without a savepoint each
     * (two statements and a context copy less per write). Should a write fail, that transaction is rolled
     * back — none of it happened — and the group is applied again, each write isolated in its savepoint: a
     * body may run twice, so it holds nothing but its SQL. A commit that fails fails the whole group.
     */
    const commitGroup = (_partition: "writes", group: ReadonlyArray<Write>) => {
      let bodyFailed = false
      const flagFailure = Effect.sync(() => {
        bodyFailed = true
      })
      return direct
        .transaction((db) =>
          Effect.forEach(group, (body) =>
            Effect.onError(
              Effect.suspend(() => body(db)),
              () => flagFailure
            )
          )
        )
        .pipe(
          Effect.matchCauseEffect({
            onSuccess: (values) => Effect.succeed(values.map((value) => Exit.succeed(value))),
            // A failed commit fails the group; so does a write's failure when it was alone (its rollback undid
            // it already); a write's failure among others re-applies the group, isolated.
            onFailure: (cause): Effect.Effect<ReadonlyArray<Exit.Exit<unknown, unknown>>> =>
              bodyFailed && group.length > 1 ? isolated(group) : Effect.succeed(failAll(group, cause))
          })
        )
    }

    // One group at a time: the writes share one connection. A caller interrupted while it waits is not
    // resumed; its write still commits with its group.
    const groups = yield* makeGroupCommit({ commit: commitGroup, serial: true })

    /**
     * Runs `body` inside the next group's transaction and answers once that transaction has committed.
     * `body` may run twice (when a neighbour's write fails), so it does nothing but its SQL.
     * Called inside a transaction already, it is a savepoint of that one instead (it commits or rolls back
     * with the caller's work).
     */
    const submit = <A, E>(body: (db: DirectStatements) => Effect.Effect<A, E>): Effect.Effect<A, E | SqlError> =>
      Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (open) =>
        open._tag === "Some"
          ? direct.transaction(body)
          : (groups.submit("writes", body as Write) as Effect.Effect<A, E | SqlError>)
      )

    return { submit } as const
  }),
  dependencies: [SqlDirect.Default]
}) {}
