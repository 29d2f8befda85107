import { describe, expect, it } from 'vitest'
import { RiskcheckError } from '../errors.js'
import { decodeListCursor, decodeResultsCursor, encodeListCursor, encodeResultsCursor } from './cursor.js'

describe('bulk cursors', () => {
  it('round-trip and are opaque url-safe strings', () => {
    const c = encodeResultsCursor('bulk_abc', 1234, 'block')
    expect(c).toMatch(/^[A-Za-z0-9_-]+$/)
    expect(decodeResultsCursor(c, 'bulk_abc', 'block')).toBe(1234)
    expect(decodeResultsCursor(encodeResultsCursor('bulk_abc', 0, null), 'bulk_abc', null)).toBe(0)
    expect(decodeListCursor(encodeListCursor(42))).toBe(42)
  })

  it('reject another job, another filter, the other kind and garbage with INVALID_REQUEST', () => {
    const c = encodeResultsCursor('bulk_abc', 5, null)
    const bad = [
      () => decodeResultsCursor(c, 'bulk_other', null),
      () => decodeResultsCursor(c, 'bulk_abc', 'approve'),
      () => decodeResultsCursor(encodeListCursor(3), 'bulk_abc', null),
      () => decodeListCursor(c),
      () => decodeResultsCursor('', 'bulk_abc', null),
      () => decodeResultsCursor('a'.repeat(500), 'bulk_abc', null),
      () => decodeResultsCursor('%%%', 'bulk_abc', null),
      () => decodeResultsCursor(17, 'bulk_abc', null),
      () => decodeResultsCursor(Buffer.from('r1|bulk_abc|-1|').toString('base64url'), 'bulk_abc', null),
      () => decodeResultsCursor(Buffer.from('r1|bulk_abc|1|maybe').toString('base64url'), 'bulk_abc', 'maybe' as 'block'),
    ]
    for (const f of bad) {
      expect(f).toThrow(RiskcheckError)
      try {
        f()
      } catch (e) {
        expect((e as RiskcheckError).code).toBe('INVALID_REQUEST')
      }
    }
  })
})
