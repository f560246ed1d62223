import * as path from "node:path"
import { Either, ParseResult, Schema } from "effect"

/** Where a source declares how it is released: a file at the top of its committed tree. */
export const RECIPE_FILE = "keel-release.json"

const RelativePath = Schema.String.pipe(
  Schema.filter(
    (p) =>
      (p.length > 0 &&
        p.length <= 512 &&
        !path.posix.isAbsolute(p) &&
        !p.split("/").some((part) => part === ".." || part === "") &&
        !p.includes("\0")) ||
      "a relative path inside the tree (no '..', no empty part)"
  )
)

/**
 * The build recipe (docs/releases.md, "The recipe"): what product the source releases, for which platform, the
 * command that builds it (run in the extracted source on a builder of that platform) and where the artifact and
 * its executable are. Its bytes' SHA-256 is the run's manifest digest.
 */
export const ReleaseRecipe = Schema.Struct({
  schema: Schema.Literal("keel.recipe/v1"),
  product: Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,63}$/)),
  platform: Schema.String.pipe(Schema.pattern(/^[a-z0-9]+(-[a-z0-9_]+)+$/)),
  build: Schema.NonEmptyArray(Schema.String.pipe(Schema.minLength(1))),
  artifact: RelativePath,
  binary: RelativePath,
  /**
   * Build secrets: environment variable → vault `item#field`. Each must be allowed by the registry's
   * `settings.agent.skarbiec.secret_fields`; the builder reads them with its own grant, never from argv.
   */
  secrets: Schema.optional(
    Schema.Record({
      key: Schema.String.pipe(
        Schema.pattern(/^[A-Z_][A-Z0-9_]{0,63}$/),
        Schema.filter((name) => !name.startsWith("KEEL_") || "KEEL_* names are Keel's own")
      ),
      value: Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}#[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/))
    })
  )
})
export type ReleaseRecipe = typeof ReleaseRecipe.Type

/** The recipe's text as a recipe, or why not (one line per problem). */
export const parseRecipe = (text: string): Either.Either<ReleaseRecipe, string> => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    return Either.left(`${RECIPE_FILE} is not JSON: ${(error as Error).message}`)
  }
  return Schema.decodeUnknownEither(ReleaseRecipe, { onExcessProperty: "error" })(json).pipe(
    Either.mapLeft(
      (error) =>
        `${RECIPE_FILE}: ${ParseResult.ArrayFormatter.formatErrorSync(error)
          .map((issue) => `${issue.path.join(".") || "(top)"}: ${issue.message}`)
          .join("; ")}`
    )
  )
}
