import { createHash } from 'node:crypto'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { RiskcheckError } from '../errors.js'
import { bodyFingerprint, canonicalJson, isReplayable, MAX_BODY_DEPTH, parseIdempotencyKey } from './idempotency.js'

/** The recursive definition the iterative writer must agree with (fingerprints stored before stay valid). */
function reference(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null'
  if (Array.isArray(value)) return `[${value.map(reference).join(',')}]`
  const keys = Object.keys(value).sort()
  return `{${keys.map((k) => `${JSON.stringify(k)}:${reference((value as Record<string, unknown>)[k])}`).join(',')}}`
}

/** `[[[…]]]` or `{"a":{"a":…}}` nested `depth` levels. */
function nested(depth: number, kind: 'array' | 'object'): unknown {
  let v: unknown = 1
  for (let i = 0; i < depth; i++) v = kind === 'array' ? [v] : { a: v }
  return v
}

describe('Idempotency-Key', () => {
  it('accepts bare tokens and sf-strings of 1–255 printable characters', () => {
    expect(parseIdempotencyKey(undefined)).toBeUndefined()
    expect(parseIdempotencyKey('abc-123')).toBe('abc-123')
    expect(parseIdempotencyKey('"8e03978e-40d5-43e8"')).toBe('8e03978e-40d5-43e8')
    expect(parseIdempotencyKey('x'.repeat(255))).toHaveLength(255)
    for (const bad of ['', '""', 'a b', 'x'.repeat(256), 'caf\u00e9']) {
      expect(() => parseIdempotencyKey(bad), bad).toThrow(RiskcheckError)
    }
    expect(() => parseIdempotencyKey(['a', 'b'])).toThrow(/one Idempotency-Key/)
  })

  it('fingerprints bodies independently of key order', () => {
    expect(bodyFingerprint({ a: 1, b: [1, { d: 2, c: 3 }] })).toBe(bodyFingerprint({ b: [1, { c: 3, d: 2 }], a: 1 }))
    expect(bodyFingerprint({ a: 1 })).not.toBe(bodyFingerprint({ a: 2 }))
    expect(bodyFingerprint({ a: [1, 2] })).not.toBe(bodyFingerprint({ a: [2, 1] }))
    expect(bodyFingerprint(undefined)).toBe(bodyFingerprint(null))
  })

  it('canonical JSON is the recursive definition, for any JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (v) => {
        expect(canonicalJson(v)).toBe(reference(v))
        expect(bodyFingerprint(v)).toBe(createHash('sha256').update(reference(v ?? null), 'utf8').digest('hex'))
      }),
    )
    const big = { inputs: Array.from({ length: 30_000 }, (_, i) => `+1201555${i}`), type: 'phone' }
    expect(bodyFingerprint(big)).toBe(createHash('sha256').update(reference(big), 'utf8').digest('hex'))
  })

  it('is bounded: nesting deeper than MAX_BODY_DEPTH is INVALID_REQUEST, never a stack overflow', () => {
    expect(() => bodyFingerprint(nested(MAX_BODY_DEPTH, 'array'))).not.toThrow()
    expect(() => bodyFingerprint(nested(MAX_BODY_DEPTH, 'object'))).not.toThrow()
    for (const depth of [MAX_BODY_DEPTH + 1, 5_000, 200_000]) {
      for (const kind of ['array', 'object'] as const) {
        let error: unknown
        try {
          bodyFingerprint(nested(depth, kind))
        } catch (e) {
          error = e
        }
        expect(error, `${kind} ${depth}`).toBeInstanceOf(RiskcheckError)
        expect(error).toMatchObject({ code: 'INVALID_REQUEST', status: 400 })
      }
    }
  })

  it('replays answers except those worth retrying', () => {
    expect([200, 201, 202, 400, 404, 422].every(isReplayable)).toBe(true)
    expect([402, 409, 429, 500, 503].some(isReplayable)).toBe(false)
  })
})
