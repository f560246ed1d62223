import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { scrubEnvironBlock } from "../services/platform/EnvironBlock.js"
import { ctlMain, exitCodeOf } from "./Run.js"

// Before any child exists: what /proc/<pid>/environ of this process shows is what a child may see (issue 42).
scrubEnvironBlock()

ctlMain(process.argv).pipe(
  NodeRuntime.runMain({
    disableErrorReporting: true,
    // Logging is configured by KEEL_LOG_FORMAT (Logging.ts); runMain would add its own pretty logger beside it.
    disablePrettyLogger: true,
    teardown: (exit, onExit) => onExit(exitCodeOf(exit))
  })
)
