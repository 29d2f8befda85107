/**
 * Form input of the dashboard, checked by the validation layer the API uses: a form's fields are validated against a
 * TypeBox schema by the server's own validator (the one Fastify runs on every API body) and refused with the API's
 * messages; every field, path parameter and query value of every dashboard request is held to the text rule of
 * src/server/text.ts (no control characters; NUL never) before a handler reads it. Fields that an API route takes
 * are checked against that route's own schema where it is called (./api.ts).
 */
import type { Static, TObject, TSchema } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import { mapError } from '../server/envelope.js'
import { textProblem } from '../server/text.js'
import { DashboardError } from './context.js'

/** Form fields that take multi-line or binary-ish values: only NUL is refused in them (passwords, bulk inputs). */
const LOOSE_FIELDS = new Set(['password', 'inputs'])

function* strings(prefix: string, value: unknown): Generator<[string, string]> {
  if (typeof value === 'string') yield [prefix, value]
  else if (Array.isArray(value)) for (const v of value) yield* strings(prefix, v)
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) yield* strings(prefix ? `${prefix}.${k}` : k, v)
}

/**
 * Why a request's params, query or form fields are not text (a message naming the field), or null. Every dashboard
 * request is checked with this before its handler runs (a 400 page when it fails).
 */
export function requestTextProblem(request: FastifyRequest): string | null {
  for (const [part, value] of [['', request.params], ['', request.query], ['', request.body]] as const) {
    for (const [name, s] of strings(part, value)) {
      const problem = textProblem(name, s, LOOSE_FIELDS.has(name))
      if (problem) return problem
    }
  }
  return null
}

const isArraySchema = (s: TSchema | undefined) => (s as { type?: unknown } | undefined)?.type === 'array'

/**
 * The fields of `schema` from the request's form, validated by the server's validator: a checkbox field (an array
 * in the schema) is a list even when one box was ticked; any other field sent twice is a type error. Fields the schema
 * does not name (`_csrf` …) are left out. A 400 DashboardError with the API's message when the form does not fit.
 */
export function readForm<T extends TObject>(request: FastifyRequest, schema: T): Static<T> {
  const body = (request.body ?? {}) as Record<string, unknown>
  const picked: Record<string, unknown> = {}
  for (const [name, def] of Object.entries(schema.properties)) {
    if (!(name in body)) continue
    const v = body[name]
    picked[name] = isArraySchema(def as TSchema) && !Array.isArray(v) ? [v] : v
  }
  const check = request.compileValidationSchema(schema, 'body')
  if (!check(picked)) throw new DashboardError(400, mapError({ validation: check.errors ?? [], validationContext: 'body' }).message)
  return picked as Static<T>
}
