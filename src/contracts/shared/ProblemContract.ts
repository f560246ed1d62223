import { HttpApi, type OpenApi } from "@effect/platform"
import { Option, SchemaAST } from "effect"
import { codeFromTag, PROBLEM_CONTENT_TYPE } from "./Problem.js"

/**
 * The contracts (HttpApi) describe errors as the server's tagged classes; what crosses the wire is the
 * problem body of `Problem.ts`. This module keeps both views in step: the OpenAPI document describes the
 * problem bodies, and `errorClasses` tells the typed clients (src/clients.ts) which class a problem's `code` names.
 */

/** The platform's decode error: on the wire, the `VALIDATION_FAILED` problem body. */
export const DECODE_ERROR_TAG = "HttpApiDecodeError"

interface ErrorClass {
  readonly tag: string
  readonly codes: ReadonlyArray<string>
}

const literals = (ast: SchemaAST.AST): ReadonlyArray<string> => {
  if (SchemaAST.isLiteral(ast) && typeof ast.literal === "string") return [ast.literal]
  if (SchemaAST.isUnion(ast)) return ast.types.flatMap(literals)
  return []
}

/** A tagged error class's tag and the codes it answers (its `code` literals, or its tag in UPPER_SNAKE). */
const errorClassOf = (ast: SchemaAST.AST): ErrorClass | undefined => {
  const encoded = SchemaAST.encodedAST(ast)
  if (!SchemaAST.isTypeLiteral(encoded)) return undefined
  const field = (name: string) => encoded.propertySignatures.find((p) => p.name === name)
  const tag = literals(field("_tag")?.type ?? SchemaAST.neverKeyword)[0]
  if (tag === undefined) return undefined
  if (tag === DECODE_ERROR_TAG) return { tag, codes: ["VALIDATION_FAILED"] }
  const codes = literals(field("code")?.type ?? SchemaAST.neverKeyword)
  return { tag, codes: codes.length > 0 ? codes : [codeFromTag(tag)] }
}

const members = (ast: SchemaAST.AST): ReadonlyArray<SchemaAST.AST> =>
  SchemaAST.isUnion(ast) ? ast.types.flatMap(members) : [ast]

/** Every error class an API declares (its endpoints', groups' and middlewares'), with the codes it answers. */
export const errorClasses = (api: HttpApi.HttpApi.Any): ReadonlyArray<ErrorClass> => {
  const found = new Map<string, ErrorClass>()
  HttpApi.reflect(api as HttpApi.HttpApi.AnyWithProps, {
    onGroup: () => {},
    onEndpoint: ({ errors }) => {
      for (const { ast } of errors.values()) {
        if (Option.isNone(ast)) continue
        for (const member of members(ast.value)) {
          const error = errorClassOf(member)
          if (error !== undefined) found.set(error.tag, error)
        }
      }
    }
  })
  return [...found.values()]
}

/** The codes every surface answers whatever its contract says: the middleware and the server's own. */
export const PLATFORM_CODES = [
  "VALIDATION_FAILED",
  "INVALID_JSON",
  "JSON_TOO_DEEP",
  "BAD_REQUEST_BODY",
  "PAYLOAD_TOO_LARGE",
  "UNSUPPORTED_MEDIA_TYPE",
  "NOT_FOUND",
  "INTERNAL_ERROR"
] as const

type JsonSchema = Record<string, unknown> & {
  properties?: Record<string, unknown>
  required?: Array<string>
}

const PROBLEM_MEMBERS = {
  type: { type: "string", description: "urn:keel:problem:<code in kebab-case>" },
  title: { type: "string", description: "The reason phrase of the status line" },
  status: { type: "integer", description: "The HTTP status" },
  detail: { type: "string", description: "A sentence for a person" },
  code: { type: "string", pattern: "^[A-Z][A-Z0-9_]*$", description: "The stable code clients switch on" }
}

const PROBLEM_REQUIRED = ["type", "title", "status", "detail", "code"]

const problemSchema = (extension: JsonSchema, codes: ReadonlyArray<string>): JsonSchema => {
  const { _tag: _t, message: _m, ...fields } = extension.properties ?? {}
  return {
    ...extension,
    type: "object",
    properties: { ...fields, ...PROBLEM_MEMBERS, code: { ...PROBLEM_MEMBERS.code, enum: [...codes] } },
    required: [
      ...new Set([...(extension.required ?? []).filter((f) => f !== "_tag" && f !== "message"), ...PROBLEM_REQUIRED])
    ],
    additionalProperties: false
  }
}

const VALIDATION_PROBLEM: JsonSchema = {
  type: "object",
  description: "The request does not match its schema: each invalid field is in `errors`",
  properties: {
    ...PROBLEM_MEMBERS,
    code: { ...PROBLEM_MEMBERS.code, enum: ["VALIDATION_FAILED"] },
    errors: {
      type: "array",
      items: {
        type: "object",
        properties: {
          path: { type: "string", description: 'Dotted path into the body, path or query; "" is the whole of it' },
          message: { type: "string", description: "What the field must be (never the value sent)" }
        },
        required: ["path", "message"],
        additionalProperties: false
      }
    }
  },
  required: [...PROBLEM_REQUIRED, "errors"],
  additionalProperties: false
}

const GENERIC_PROBLEM: JsonSchema = {
  type: "object",
  description: "RFC 9457 problem details; typed errors add their own members (docs/errors.md)",
  properties: { ...PROBLEM_MEMBERS },
  required: PROBLEM_REQUIRED
}

/**
 * The OpenAPI transform of every surface: error answers are `application/problem+json`, each declared error
 * a problem body (its own fields, the five problem members, no `_tag`), the decode error the
 * `VALIDATION_FAILED` body with `errors`, and any other status a generic `Problem`.
 */
export const problemOpenApi = (document: Record<string, unknown>): Record<string, unknown> => {
  const spec = document as unknown as OpenApi.OpenAPISpec
  const schemas = spec.components.schemas as unknown as Record<string, JsonSchema>
  for (const [name, schema] of Object.entries(schemas)) {
    // An error class is an object schema whose `_tag` is one literal; its codes are its `code` literals.
    const tag = (schema.properties?._tag as { enum?: Array<string> } | undefined)?.enum
    if (name === DECODE_ERROR_TAG) schemas[name] = VALIDATION_PROBLEM
    else if (tag?.length === 1) {
      const codes = (schema.properties?.code as { enum?: Array<string> } | undefined)?.enum ?? [codeFromTag(tag[0]!)]
      schemas[name] = problemSchema(schema, codes)
    }
  }
  // The decoder's own issue tree is no longer answered: drop its schemas unless something else uses them.
  for (const unused of ["Issue", "PropertyKey"]) {
    const { [unused]: _, ...others } = schemas
    if (!JSON.stringify(others).includes(`#/components/schemas/${unused}"`)) delete schemas[unused]
  }
  schemas.Problem = GENERIC_PROBLEM
  for (const operations of Object.values(spec.paths)) {
    for (const operation of Object.values(operations as Record<string, unknown>)) {
      const responses = (operation as { responses?: Record<string, { content?: Record<string, unknown> }> }).responses
      if (responses === undefined) continue
      for (const [status, response] of Object.entries(responses)) {
        const json = response.content?.["application/json"] as { schema?: Record<string, unknown> } | undefined
        if (Number(status) < 400 || json === undefined) continue
        // Any route's 400 may also be a refusal of the body as such (INVALID_JSON, JSON_TOO_DEEP): a problem
        // without the route's own members, so the generic Problem is one of the answers.
        const schema =
          status === "400" && json.schema !== undefined
            ? {
                anyOf: [
                  ...((json.schema.anyOf as Array<unknown>) ?? [json.schema]),
                  { $ref: "#/components/schemas/Problem" }
                ]
              }
            : json.schema
        response.content = { [PROBLEM_CONTENT_TYPE]: { ...json, schema } }
      }
      responses.default ??= {
        description: "Any other error (413, 415, 404, 429, 500…) as a problem body",
        content: { [PROBLEM_CONTENT_TYPE]: { schema: { $ref: "#/components/schemas/Problem" } } }
      } as never
    }
  }
  return document
}
