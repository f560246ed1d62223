import { NodeRuntime } from "@effect/platform-node"
import { ctlMain, exitCodeOf } from "./Run.js"

ctlMain(process.argv).pipe(
  NodeRuntime.runMain({
    disableErrorReporting: true,
    // Logging is configured by KEEL_LOG_FORMAT (Logging.ts); runMain would add its own pretty logger beside it.
    disablePrettyLogger: true,
    teardown: (exit, onExit) => onExit(exitCodeOf(exit))
  })
)
