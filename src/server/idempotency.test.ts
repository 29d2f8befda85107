import { describe, expect, it } from 'vitest'
import { RiskcheckError } from '../errors.js'
import { bodyFingerprint, isReplayable, parseIdempotencyKey } from './idempotency.js'

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

  it('replays answers except those worth retrying', () => {
    expect([200, 201, 202, 400, 404, 422].every(isReplayable)).toBe(true)
    expect([402, 409, 429, 500, 503].some(isReplayable)).toBe(false)
  })
})
