import { NodeRuntime } from "@effect/platform-node"
import { ctlMain, exitCodeOf } from "./Run.js"

ctlMain(process.argv).pipe(
  NodeRuntime.runMain({
    disableErrorReporting: true,
    teardown: (exit, onExit) => onExit(exitCodeOf(exit))
  })
)
