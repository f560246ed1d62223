import { JSONSchema, Schema } from "effect"

/** A JSON Schema with its definitions written in place (the shapes here are not recursive). */
const inlined = (value: unknown, definitions: Record<string, unknown>): unknown => {
  if (Array.isArray(value)) return value.map((item) => inlined(item, definitions))
  if (value === null || typeof value !== "object") return value
  const ref = (value as { $ref?: unknown }).$ref
  if (typeof ref === "string" && ref.startsWith("#/$defs/")) return inlined(definitions[ref.slice(8)], definitions)
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, inlined(item, definitions)]))
}

/**
 * An answer described by `shape` — in the OpenAPI document and as the typed clients' type — but passed through as
 * the service built it, never re-encoded. These answers are the bytes `ctl … --json` prints for the same command:
 * encoding through a Struct would write the keys in the schema's order and drop any it does not name, so a field a
 * service adds would silently vanish from the HTTP answer alone. The shapes are held to the real answers instead:
 * tests decode them with `shape`, excess keys refused (test/fleet/fleet-api.test.ts); the handlers' return types
 * are checked against `shape` by the compiler.
 *
 * A request body a service validates itself (the host-health beacon) is described the same way: the OpenAPI
 * document and the clients' parameter type say what to send, the handler receives the body as sent, and the
 * service's own checks answer, in their order (credentials before the document) and with their messages.
 */
export const describedBy = <A, I>(shape: Schema.Schema<A, I, never>, description: string) => {
  const definitions: Record<string, JSONSchema.JsonSchema7> = {}
  const jsonSchema = inlined(JSONSchema.fromAST(shape.ast, { definitions, target: "openApi3.1" }), definitions)
  return Schema.declare((_input: unknown): _input is A => true, { description, jsonSchema: jsonSchema as object })
}
