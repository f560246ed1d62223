import { Effect } from "effect"
import { Blog } from "../../services/product/Blog.js"
import { CommandFailed, emit } from "../Output.js"

export const importPosts = ({ dir, json }: { readonly dir: string; readonly json: boolean }) =>
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
