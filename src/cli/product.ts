import { Args, Command, Options } from "@effect/cli"
import { ProductLive } from "./Layers.js"
import { lazyRun } from "./Lazy.js"
import { integerOption, json } from "./Output.js"

const impl = lazyRun(() => import("./run/product.js"))

const from = Options.text("from").pipe(
  Options.withDescription("Start, inclusive: ISO 8601 date (UTC) or date-time with a zone"),
  Options.optional
)
const to = Options.text("to").pipe(
  Options.withDescription("End, exclusive (a date means the end of that day); default now"),
  Options.optional
)

export const resultsConfig = {
  experiment: Args.text({ name: "EXPERIMENT" }).pipe(Args.withDescription("The experiment id")),
  metric: Options.text("metric").pipe(Options.withDescription("The analytics event name that counts as a conversion")),
  from,
  to,
  json
}

const results = Command.make("results", resultsConfig, (args) => impl((m) => m.results(args))).pipe(
  Command.withDescription("An experiment's results per variant, with their statistics (docs/analytics.md)")
)

export const summaryConfig = {
  site: Options.text("site").pipe(Options.withDescription("The analytics site id")),
  from,
  to,
  interval: Options.choice("interval", ["day", "hour"]).pipe(
    Options.withDescription("Bucket size of the series (UTC)"),
    Options.withDefault("day" as const)
  ),
  limit: integerOption("limit", 1, 100).pipe(
    Options.withDescription("Rows of each top list, 1..100"),
    Options.withDefault(10)
  ),
  json
}

const summary = Command.make("summary", summaryConfig, (args) => impl((m) => m.summary(args))).pipe(
  Command.withDescription("A site's visitors, pageviews, top pages, referrers and UTM sources (default: last 30 days)")
)

export const product = Command.make("product").pipe(
  Command.withDescription("The product-client API's readout: experiment results and analytics summaries"),
  Command.withSubcommands([results, summary]),
  Command.provide(ProductLive)
)
