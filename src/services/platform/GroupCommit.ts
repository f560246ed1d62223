import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { type Cause, Effect, Exit, Runtime } from "effect"
import { type DirectStatements, SqlDirect } from "./SqlDirect.js"

interface Pending {
  readonly body: (db: DirectStatements) => Effect.Effect<unknown, unknown>
  /** Resumes the waiting caller (a plain callback: a `Deferred` per write cost ≈ 6 µs in the assignment's profile). */
  readonly done: (exit: Exit.Exit<unknown, unknown>) => void
}

/**
 * Group commit for small hot-path writes (an assignment and its exposure): the writes submitted while the
 * event loop was busy are applied in **one** transaction, and every caller is answered once that transaction
 * has committed — with its own result, or its own failure (a failed write is undone alone and does not fail
 * the others: see `commitGroup`). A group forms without a timer: the first write of a group waits one turn
 * of the event loop (`setImmediate`), during which the server reads the requests its sockets hold and they
 * join. A commit that fails fails the whole group (none of it happened).
 */
export class GroupCommit extends Effect.Service<GroupCommit>()("platform/GroupCommit", {
  effect: Effect.gen(function* () {
    const direct = yield* SqlDirect
    const runtime = yield* Effect.runtime<never>()
    let queue: Array<Pending> = []
    let scheduled = false

    const settle = (group: ReadonlyArray<Pending>, exits: ReadonlyArray<Exit.Exit<unknown, unknown>>) =>
      group.forEach((pending, i) => {
        pending.done(exits[i] ?? Exit.die("lost"))
      })
    const failAll = (group: ReadonlyArray<Pending>, cause: Cause.Cause<unknown>) => {
      for (const pending of group) pending.done(Exit.failCause(cause))
    }

    /** Each write in its own savepoint of the group's transaction: a failed write undoes only itself. */
    const isolated = (group: ReadonlyArray<Pending>) =>
      direct.transaction(Effect.forEach(group, (pending) => Effect.exit(direct.transaction(pending.body)))).pipe(
        Effect.matchCause({
          onFailure: (cause) => failAll(group, cause),
          onSuccess: (exits) => settle(group, exits)
        })
      )

    /**
     * The common case first: every write straight into the group's transaction, without a savepoint each
     * (two statements and a context copy less per write). Should a write fail, that transaction is rolled
     * back — none of it happened — and the group is applied again, each write isolated in its savepoint: a
     * body may run twice, so it holds nothing but its SQL. A commit that fails fails the whole group.
     */
    const commitGroup = (group: ReadonlyArray<Pending>) => {
      let bodyFailed = false
      const flagFailure = Effect.sync(() => {
        bodyFailed = true
      })
      return direct
        .transaction((db) =>
          Effect.forEach(group, (pending) =>
            Effect.onError(
              Effect.suspend(() => pending.body(db)),
              () => flagFailure
            )
          )
        )
        .pipe(
          Effect.matchCauseEffect({
            onSuccess: (values) =>
              Effect.sync(() =>
                settle(
                  group,
                  values.map((value) => Exit.succeed(value))
                )
              ),
            // A failed commit fails the group; so does a write's failure when it was alone (its rollback undid
            // it already); a write's failure among others re-applies the group, isolated.
            onFailure: (cause) =>
              bodyFailed && group.length > 1 ? isolated(group) : Effect.sync(() => failAll(group, cause))
          })
        )
    }

    const drain = () => {
      const group = queue
      queue = []
      Runtime.runFork(runtime)(
        commitGroup(group).pipe(
          Effect.ensuring(
            Effect.sync(() => {
              if (queue.length > 0) setImmediate(drain)
              else scheduled = false
            })
          )
        )
      )
    }

    // A caller interrupted while it waits is not resumed; its write still commits with its group.
    const enqueue = <A, E>(body: (db: DirectStatements) => Effect.Effect<A, E>) =>
      Effect.async<A, E | SqlError>((resume) => {
        queue.push({ body, done: resume as Pending["done"] })
        if (!scheduled) {
          scheduled = true
          setImmediate(drain)
        }
      })

    /**
     * Runs `body` inside the next group's transaction and answers once that transaction has committed.
     * `body` may run twice (when a neighbour's write fails), so it does nothing but its SQL.
     * Called inside a transaction already, it is a savepoint of that one instead (it commits or rolls back
     * with the caller's work).
     */
    const submit = <A, E>(body: (db: DirectStatements) => Effect.Effect<A, E>): Effect.Effect<A, E | SqlError> =>
      Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (open) =>
        open._tag === "Some" ? direct.transaction(body) : enqueue(body)
      )

    return { submit } as const
  }),
  dependencies: [SqlDirect.Default]
}) {}
