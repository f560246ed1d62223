export { createReporter, type EventTargetLike, type Reporter, type ReporterOptions, safeProps } from "./Reporter.js"
