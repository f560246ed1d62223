import { Args, Command } from "@effect/cli"
import { ProductLive } from "./Layers.js"
import { lazyRun } from "./Lazy.js"
import { json } from "./Output.js"

const impl = lazyRun(() => import("./run/blog.js"))

const dir = Args.directory({ name: "DIR", exists: "yes" }).pipe(
  Args.withDescription("A directory of Markdown posts with front matter (docs/blog.md)")
)

const importCommand = Command.make("import", { dir, json }, (args) => impl((m) => m.importPosts(args))).pipe(
  Command.withDescription(
    "Import Markdown posts (idempotent: unchanged posts are left alone); exit 1 if any file fails"
  )
)

export const blog = Command.make("blog").pipe(
  Command.withDescription("The public blog's posts"),
  Command.withSubcommands([importCommand]),
  Command.provide(ProductLive)
)
