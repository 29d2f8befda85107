/**
 * Validation of lookup results against the runtime schema (src/schema.ts), shared by every suite.
 */
import { Ajv, type ErrorObject } from 'ajv'
import addFormatsModule from 'ajv-formats'
import { RESULT_SCHEMAS, type LookupType } from '../src/schema.js'

// ajv-formats is CJS with a default export; under NodeNext its default import is the module object.
type AddFormats = (ajv: Ajv) => Ajv
const addFormats: AddFormats =
  (addFormatsModule as unknown as { default?: AddFormats }).default ?? (addFormatsModule as unknown as AddFormats)

const ajv = new Ajv({ allErrors: true, strict: false })
addFormats(ajv)
const validators = new Map<LookupType, ReturnType<typeof ajv.compile>>()

/**
 * Validates a lookup result against the schema of its type; returns a list of errors (empty when valid).
 * Checks the closed vocabularies, `risk.score` ≤ 100, field names and types.
 */
export function resultErrors(result: unknown, type?: LookupType): string[] {
  const t = type ?? ((result as { request?: { type?: LookupType } })?.request?.type as LookupType)
  if (!t || !(t in RESULT_SCHEMAS)) return [`unknown lookup type ${String(t)}`]
  let v = validators.get(t)
  if (!v) {
    v = ajv.compile(RESULT_SCHEMAS[t])
    validators.set(t, v)
  }
  if (v(result)) return []
  return (v.errors ?? []).map((e: ErrorObject) => `${e.instancePath || '/'} ${e.message ?? ''} ${JSON.stringify(e.params)}`)
}

/** Throws with readable errors when `result` does not match its schema. */
export function assertValidResult(result: unknown, type?: LookupType): void {
  const errors = resultErrors(result, type)
  if (errors.length > 0) throw new Error(`result does not match the schema:\n${errors.join('\n')}\n${JSON.stringify(result, null, 2)}`)
}

/** Validates any value against any TypeBox schema; returns errors (empty when valid). */
export function schemaErrors(schema: object, value: unknown): string[] {
  const v = ajv.compile(schema)
  return v(value) ? [] : (v.errors ?? []).map((e: ErrorObject) => `${e.instancePath || '/'} ${e.message ?? ''}`)
}

