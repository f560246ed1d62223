import { Args, Command } from "@effect/cli"
import { Effect } from "effect"
import { ServicesLive } from "../layers/Live.js"
import { Blog } from "../services/product/Blog.js"
import { CommandFailed, emit, json } from "./Output.js"

const dir = Args.directory({ name: "DIR", exists: "yes" }).pipe(
  Args.withDescription("A directory of Markdown posts with front matter (docs/blog.md)")
)

const importCommand = Command.make("import", { dir, json }, ({ dir, json }) =>
  Effect.gen(function* () {
    const blog = yield* Blog
    const report = yield* blog
      .importDirectory(dir)
      .pipe(Effect.catchTag("PostImportFailed", (error) => Effect.fail(new CommandFailed({ detail: error.detail }))))
    yield* emit(json, report, (r) =>
      [
        `imported ${r.created.length} new, ${r.updated.length} updated, ${r.unchanged} unchanged, ${r.failed.length} failed`,
        ...r.created.map((key) => `  + ${key}`),
        ...r.updated.map((key) => `  ~ ${key}`),
        ...r.failed.map((f) => `  ! ${f.file}: ${f.reason}`)
      ].join("\n")
    )
    if (report.failed.length > 0) {
      return yield* new CommandFailed({ detail: `${report.failed.length} file(s) could not be imported` })
    }
  })
).pipe(
  Command.withDescription(
    "Import Markdown posts (idempotent: unchanged posts are left alone); exit 1 if any file fails"
  )
)

export const blog = Command.make("blog").pipe(
  Command.withDescription("The public blog's posts"),
  Command.withSubcommands([importCommand]),
  Command.provide(ServicesLive)
)
