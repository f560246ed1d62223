import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Exit, Runtime } from "effect"
import { type DirectStatements, SqlDirect } from "./SqlDirect.js"

interface Pending {
  readonly body: (db: DirectStatements) => Effect.Effect<unknown, unknown>
  /** Resumes the waiting caller (a plain callback: a `Deferred` per write cost ≈ 6 µs in the assignment's profile). */
  readonly done: (exit: Exit.Exit<unknown, unknown>) => void
}

/**
 * Group commit for small hot-path writes (an assignment and its exposure): the writes submitted while the
 * event loop was busy are applied in **one** transaction, each in its own savepoint, and every caller is
 * answered once that transaction has committed — with its own result, or its own failure (a failed write
 * rolls back its savepoint only and does not fail the others). A group forms without a timer: the first
 * write of a group waits one turn of the event loop (`setImmediate`), during which the server reads the
 * requests its sockets hold and they join. A commit that fails fails the whole group (none of it happened).
 */
export class GroupCommit extends Effect.Service<GroupCommit>()("platform/GroupCommit", {
  effect: Effect.gen(function* () {
    const direct = yield* SqlDirect
    const runtime = yield* Effect.runtime<never>()
    let queue: Array<Pending> = []
    let scheduled = false

    const commitGroup = (group: ReadonlyArray<Pending>) =>
      direct
        // Each write in its own savepoint of the group's transaction.
        .transaction(Effect.forEach(group, (pending) => Effect.exit(direct.transaction(pending.body))))
        .pipe(
          Effect.matchCause({
            onFailure: (cause) => {
              for (const pending of group) pending.done(Exit.failCause(cause))
            },
            onSuccess: (exits) => {
              group.forEach((pending, i) => {
                pending.done(exits[i] ?? Exit.die("lost"))
              })
            }
          })
        )

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
