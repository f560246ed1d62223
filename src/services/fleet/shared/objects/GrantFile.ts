import * as fs from "node:fs/promises"
import { Data, Effect, Schema } from "effect"
import { GrantCredential } from "../../../../contracts/vault/Schemas.js"
import { formatIssues } from "../../../platform/Validation.js"

/** Why a grant credential file cannot be used; the detail never quotes the file's content. */
export class GrantFileUnreadable extends Data.TaggedError("GrantFileUnreadable")<{ readonly detail: string }> {}

/**
 * The grant credential in `file`, for every client that exchanges a grant at the vault (the beacon's
 * publication, the object API's client). The file holds a secret, so no failure quotes its content: not JSON
 * says so (the parser's message would quote the text), a wrong shape names the fields and what they
 * must be, never their values.
 */
export const readGrantFile = (file: string) =>
  Effect.gen(function* () {
    const text = yield* Effect.tryPromise({
      try: () => fs.readFile(file, "utf8"),
      catch: (error) => new GrantFileUnreadable({ detail: `cannot read the grant file: ${(error as Error).message}` })
    })
    const raw = yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: () =>
        new GrantFileUnreadable({ detail: `${file} is not valid JSON (a grant credential file is a JSON object)` })
    })
    return yield* Schema.decodeUnknown(GrantCredential)(raw, { errors: "all" }).pipe(
      Effect.mapError(
        (error) =>
          new GrantFileUnreadable({
            detail: `${file} is not a grant credential: ${formatIssues(error, { limit: 5, withoutValues: true })}`
          })
      )
    )
  })
