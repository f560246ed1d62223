// The OpenAPI document is the contract a generated client (Swift, Kotlin, Go…) is built from, so answers
// are checked with a decoder built from that document.

// biome-ignore lint/suspicious/noExplicitAny: JSON Schema objects from the OpenAPI document
export type OpenApiSchema = any

/**
 * A strict decoder built from an OpenAPI 3.1 schema, as a generated Swift/Kotlin/Go client decodes:
 * every required property present, every value of its declared type (a `number` is a JSON number,
 * never null unless the schema allows null), enums closed. Returns the problems found.
 */
export const decoderFor =
  (components: Record<string, OpenApiSchema>) =>
  (schema: OpenApiSchema, value: unknown, path = "$"): ReadonlyArray<string> => {
    const decode = decoderFor(components)
    if (schema.$ref !== undefined)
      return decode(components[schema.$ref.replace("#/components/schemas/", "")], value, path)
    if (schema.anyOf !== undefined || schema.oneOf !== undefined) {
      const options: ReadonlyArray<OpenApiSchema> = schema.anyOf ?? schema.oneOf
      return options.some((option) => decode(option, value, path).length === 0) ? [] : [`${path}: matches no variant`]
    }
    if (schema.allOf !== undefined)
      return (schema.allOf as ReadonlyArray<OpenApiSchema>).flatMap((part) => decode(part, value, path))
    if (schema.enum !== undefined && !schema.enum.includes(value)) return [`${path}: ${String(value)} not in enum`]
    const types: ReadonlyArray<string> = Array.isArray(schema.type) ? schema.type : [schema.type]
    const kind =
      value === null
        ? "null"
        : Array.isArray(value)
          ? "array"
          : typeof value === "number"
            ? Number.isInteger(value)
              ? "integer"
              : "number"
            : typeof value
    if (schema.type !== undefined && !types.includes(kind) && !(kind === "integer" && types.includes("number")))
      return [`${path}: expected ${types.join("|")}, got ${kind}`]
    if (kind === "array" && schema.items !== undefined)
      return (value as ReadonlyArray<unknown>).flatMap((item, i) => decode(schema.items, item, `${path}[${i}]`))
    if (kind === "object") {
      const record = value as Record<string, unknown>
      const missing = ((schema.required ?? []) as ReadonlyArray<string>)
        .filter((key) => !(key in record))
        .map((key) => `${path}.${key}: missing`)
      const fields = Object.entries(schema.properties ?? {}).flatMap(([key, property]) =>
        key in record ? decode(property, record[key], `${path}.${key}`) : []
      )
      // A closed object (additionalProperties: false) has no member the schema does not name.
      const extra =
        schema.additionalProperties === false
          ? Object.keys(record)
              .filter((key) => !(key in (schema.properties ?? {})))
              .map((key) => `${path}.${key}: not in the schema`)
          : []
      return [...missing, ...fields, ...extra]
    }
    return []
  }
