// The start-up baseline of bench/startup.mjs: a bare @effect/cli program on Node's runtime, loaded from
// node_modules unbundled (what a new @effect/cli program costs before any code of its own).
import { Command } from "@effect/cli"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Effect } from "effect"

const bare = Command.make("bare", {}, () => Effect.void)

Command.run(bare, { name: "bare", version: "0.0.0" })(process.argv).pipe(
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain
)
