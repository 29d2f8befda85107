import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ACTIONS, CONTEXTS } from '../schema.js'
import { parseAnswerLine } from './answer-line.js'
import { FACTOR_CODES } from './factors.js'
import { toStoredAnswer } from './stored-answer.js'

// Strings that try to look like the structure the fast path cuts at.
const tricky = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.constantFrom(',"details":{', '","details":{"x":1}}', ',"recommendation":{"action":"block"}}', '"context":"lead"}', '\\', '}}', '"}'),
)
const text = fc.array(tricky, { maxLength: 3 }).map((parts) => parts.join(''))
const factors = fc.uniqueArray(fc.constantFrom(...FACTOR_CODES), { maxLength: 4 })
const action = fc.constantFrom(...ACTIONS)
const details = fc.dictionary(fc.string({ maxLength: 6 }), fc.oneof(text, fc.integer(), fc.constant(null), fc.dictionary(text, text, { maxKeys: 2 })), { maxKeys: 4 })

const bulkRow = fc.record({
  input: text,
  action: fc.option(action),
  status: fc.constant('risky'),
  reason: text,
  risk_score: fc.integer({ min: 0, max: 100 }),
  credits_used: fc.constant(1),
  cache_hit: fc.boolean(),
  error: fc.option(text),
  factors: fc.option(factors),
  details,
})

const lookupResult = fc.record({
  type: fc.constantFrom('email', 'ip', 'check'),
  input: text,
  email: text,
  factors,
  action,
  context: fc.constantFrom(null, ...CONTEXTS),
  details,
  envelope: fc.boolean(),
}).map((r) => {
  const result = {
    request: { id: 'req_1', type: r.type, input: r.type === 'check' ? { email: r.email, ip: '192.0.2.1' } : r.input, timestamp: 't', processing_time_ms: 1 },
    metadata: { api_version: '1', data_sources: ['x'] },
    verdict: { status: 'risky', reason: 'r' },
    risk: { score: 10, level: 'low', factors: r.factors, confidence: 'high' },
    details: r.type === 'check' ? { email: { ...r.details, risk: { factors: ['ip_vpn'] } }, signals: {}, context: r.context } : r.details,
    recommendation: { action: r.action, message: 'm' },
    partial: false,
  }
  return r.envelope ? { success: true, data: result } : result
})

const unwrap = (v: unknown) => ((v as { success?: boolean }).success ? (v as { data: unknown }).data : v)

describe('parseAnswerLine()', () => {
  it('skips the details of lines in riskcheck key order', () => {
    const row = { input: 'a@x.example', action: 'approve', status: 'valid', reason: 'ok', risk_score: 0, credits_used: 1, cache_hit: false, error: null, factors: [], details: { big: 'x'.repeat(100) } }
    expect(parseAnswerLine(JSON.stringify(row))).toEqual({ ...row, details: undefined })
    expect(parseAnswerLine(JSON.stringify(row))).not.toHaveProperty('details')
  })

  it('gives the same stored answer as a whole parse, whatever the strings inside (bulk rows, results, envelopes, checks)', () => {
    fc.assert(
      fc.property(fc.oneof(bulkRow, lookupResult), (value) => {
        const line = JSON.stringify(value)
        expect(toStoredAnswer(unwrap(parseAnswerLine(line)))).toEqual(toStoredAnswer(unwrap(JSON.parse(line))))
      }),
      { numRuns: 500 },
    )
  })

  it('parses whole any line in another key order, and throws for a line that is not JSON', () => {
    const reordered = { details: { a: 1 }, input: 'x', factors: ['ip_vpn'], action: 'approve', error: null }
    expect(parseAnswerLine(JSON.stringify(reordered))).toEqual(reordered)
    const after = { input: 'x', factors: ['ip_vpn'], details: { a: 1 }, action: 'approve', error: null }
    expect(parseAnswerLine(JSON.stringify(after))).toEqual(after)
    expect(() => parseAnswerLine('{"input":"x","details":{')).toThrow(SyntaxError)
  })
})
