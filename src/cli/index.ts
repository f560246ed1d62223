/** `Cli` in the package entry: the `ctl` command tree, for embedding its commands in another program. */
export { ctl, runCtl } from "./Cli.js"
export { type CommandNode, commandTree } from "./Help.js"
export { ctlMain, exitCodeOf, unknownCommand } from "./Run.js"
