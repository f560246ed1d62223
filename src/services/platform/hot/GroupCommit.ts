import { Effect, Exit, FiberSet, type Scope } from "effect"

/** An item waiting for its group, and how its caller is answered (a plain callback: no `Deferred` per item). */
interface Waiting<I, A, E> {
  readonly item: I
  readonly resume: (exit: Exit.Exit<A, E>) => void
}

export interface GroupCommitOptions<K, I, A, E, R> {
  /**
   * Applies one group of a partition, its items in arrival order, and answers one exit per item, in the same
   * order. A failure of the effect itself (a commit that failed, an interruption) fails every item of the
   * group: none of it happened.
   */
  readonly commit: (partition: K, items: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<Exit.Exit<A, E>>, E, R>
  /** Items per group at most (not serial): what arrived beyond that leaves as further groups in the same turn. */
  readonly maxGroup?: number
  /**
   * One group of a partition at a time: what arrives while a group commits waits for it, and forms the next
   * group (a single writer, such as one SQLite connection). Otherwise a group leaves every turn and several
   * may be on their way at once (the actor they reach queues them).
   */
  readonly serial?: boolean
}

export interface GroupCommitter<K, I, A, E> {
  /**
   * Queues `item` in `partition`'s next group and answers the item's own exit once its group has committed.
   * `settled`, when given, runs as the exit is known, before the caller resumes (and even if the caller was
   * interrupted meanwhile: its item still commits with its group).
   */
  readonly submit: (partition: K, item: I, settled?: () => void) => Effect.Effect<A, E>
}

/**
 * Group commit for the hot paths, keyed by partition (a ticker, or one shared partition): the items submitted
 * while the event loop was busy form **one** group, committed by one `commit`, and every caller is answered
 * with its own exit once that group has committed. A group forms without a timer: the first item of a
 * partition waits one turn of the event loop (`setImmediate`), during which the server reads the requests its
 * sockets hold and they join. The commits run in a `FiberSet` owned by the caller's scope (the layer that
 * built this), so closing the layer interrupts the groups in flight, and their callers are answered with the
 * interruption instead of being left waiting.
 */
export const makeGroupCommit = <K, I, A, E, R = never>(
  options: GroupCommitOptions<K, I, A, E, R>
): Effect.Effect<GroupCommitter<K, I, A, E>, never, Scope.Scope | R> =>
  Effect.gen(function* () {
    const fibers = yield* FiberSet.make()
    const run = yield* FiberSet.runtime(fibers)<R>()
    // A serial partition commits whatever waited as one group: two groups would be two writers.
    const maxGroup = options.serial === true ? Number.POSITIVE_INFINITY : (options.maxGroup ?? Number.POSITIVE_INFINITY)
    const queues = new Map<K, Array<Waiting<I, A, E>>>()
    /** Serial partitions with a group scheduled or committing. */
    const busy = new Set<K>()

    const settle = (group: ReadonlyArray<Waiting<I, A, E>>, exit: Exit.Exit<ReadonlyArray<Exit.Exit<A, E>>, E>) => {
      if (Exit.isFailure(exit)) {
        const failed = Exit.failCause(exit.cause)
        for (const waiting of group) waiting.resume(failed)
        return
      }
      group.forEach((waiting, i) => {
        waiting.resume(exit.value[i] ?? Exit.die("the group answered fewer results than items"))
      })
    }

    const commitGroup = (partition: K, group: ReadonlyArray<Waiting<I, A, E>>) =>
      Effect.suspend(() =>
        options.commit(
          partition,
          group.map((waiting) => waiting.item)
        )
      ).pipe(
        // Whatever ended the commit (an interruption with the layer included), each caller is answered once.
        Effect.onExit((exit) =>
          Effect.sync(() => {
            settle(group, exit)
            if (options.serial === true) next(partition)
          })
        )
      )

    const drain = (partition: K): void => {
      const queued = queues.get(partition) ?? []
      queues.delete(partition)
      for (let start = 0; start < queued.length; start += maxGroup) {
        run(commitGroup(partition, queued.slice(start, start + maxGroup)))
      }
    }

    /** A serial partition's group has committed: what arrived meanwhile leaves after one more turn. */
    const next = (partition: K) => {
      if (queues.has(partition)) setImmediate(() => drain(partition))
      else busy.delete(partition)
    }

    const submit = (partition: K, item: I, settled?: () => void) =>
      Effect.async<A, E>((resume) => {
        let queue = queues.get(partition)
        if (queue === undefined) {
          queue = []
          queues.set(partition, queue)
          if (options.serial !== true) setImmediate(() => drain(partition))
          else if (!busy.has(partition)) {
            busy.add(partition)
            setImmediate(() => drain(partition))
          }
        }
        queue.push({
          item,
          resume:
            settled === undefined
              ? resume
              : (exit) => {
                  settled()
                  resume(exit)
                }
        })
      })

    return { submit } as const
  })
