import type { Command } from "@effect/cli"
import { CommandDescriptor, HelpDoc, Usage } from "@effect/cli"

/**
 * The `ctl` command tree as names, descriptions and usages. @effect/cli's own help for a group repeats the
 * group names of nested commands (`market market agent create`) and pads every line to the longest usage of
 * the whole tree, so groups (the root included) get their help from here; a leaf's `--help` stays @effect/cli's.
 */
export interface CommandNode {
  readonly name: string
  readonly description: string
  /** The leaf's own usage (options and arguments, without its name); empty for a group. */
  readonly usage: string
  readonly children: ReadonlyMap<string, CommandNode> | undefined
}

interface Descriptor {
  readonly _tag: string
  readonly name?: string
  readonly description?: HelpDoc.HelpDoc
  readonly command?: Descriptor
  readonly parent?: Descriptor
  readonly children?: ReadonlyArray<Descriptor>
}

const plain = (doc: HelpDoc.HelpDoc | undefined): string =>
  doc === undefined || HelpDoc.isEmpty(doc) ? "" : spanText(HelpDoc.getSpan(doc))

const spanText = (span: unknown): string => {
  const node = span as { _tag: string; value?: unknown; left?: unknown; right?: unknown }
  switch (node._tag) {
    case "Sequence":
      return spanText(node.left) + spanText(node.right)
    case "Text":
    case "URI":
      return String(node.value)
    default:
      return spanText(node.value)
  }
}

const treeOf = (descriptor: Descriptor): CommandNode => {
  if (descriptor._tag === "Map" && descriptor.command !== undefined) return treeOf(descriptor.command)
  if (descriptor._tag === "Subcommands" && descriptor.parent !== undefined) {
    const parent = treeOf(descriptor.parent)
    const children = new Map((descriptor.children ?? []).map((child) => treeOf(child)).map((c) => [c.name, c] as const))
    return { ...parent, usage: "", children }
  }
  const name = descriptor.name ?? ""
  const full = plain(
    Usage.getHelp(CommandDescriptor.getUsage(descriptor as unknown as CommandDescriptor.Command<unknown>))
  )
  const usage = full.startsWith(name) ? full.slice(name.length).trim() : full
  return { name, description: plain(descriptor.description), usage, children: undefined }
}

export const commandTree = <Name extends string, E, A>(command: Command.Command<Name, never, E, A>): CommandNode =>
  treeOf((command as unknown as { descriptor: Descriptor }).descriptor)

interface Line {
  readonly path: string
  readonly description: string
}

/** Every leaf under a node, with its path from that node: `agent create --ticker text …`. */
const leaves = (node: CommandNode, prefix: ReadonlyArray<string>): ReadonlyArray<Line> =>
  node.children === undefined
    ? [{ path: [...prefix, node.usage].filter((s) => s !== "").join(" "), description: node.description }]
    : [...node.children.values()].flatMap((child) => leaves(child, [...prefix, child.name]))

/** The help of a group: what it is, how it is called, and every command under it with its full path. */
export const groupHelp = (root: CommandNode, path: ReadonlyArray<string>, version: string): string => {
  let node = root
  for (const name of path) node = node.children?.get(name) ?? node
  const called = ["ctl", ...path].join(" ")
  const lines = leaves(node, [])
  // Long usages go on their own line, so one long command does not push every description off the screen.
  const width = lines.reduce((max, line) => (line.path.length <= 60 ? Math.max(max, line.path.length) : max), 0)
  const commands = lines.map((line) =>
    line.path.length > width
      ? `  ${line.path}\n  ${" ".repeat(width)}  ${line.description}`
      : `  ${line.path.padEnd(width)}  ${line.description}`
  )
  return [
    path.length === 0 ? `ctl ${version}` : called,
    "",
    node.description,
    "",
    "USAGE",
    `  ${called} <command> [options] [arguments]`,
    `  ${called} <command> --help`,
    "",
    "COMMANDS",
    ...commands,
    "",
    "OPTIONS",
    "  -h, --help                 show the help of a command (or of a group, as here)",
    ...(path.length === 0
      ? [
          "  --version                  print the version",
          "  --log-level LEVEL          all | trace | debug | info | warning | error | fatal | none",
          "  --completions SHELL        print a completion script: sh | bash | fish | zsh"
        ]
      : []),
    "  --json                     (on most commands) one JSON document on stdout instead of text",
    ""
  ].join("\n")
}
