/**
 * POST /v1/outcomes with generated bodies (random strings, Unicode, wrong types, missing and extra fields, items
 * of either form or neither) on a server over SQLite: every answer is a 200 with one result per item, each a
 * documented status, or a 400 with INVALID_REQUEST / MISSING_FIELD — never a 5xx. Also the input-form keys:
 * `outcomeInputKey` never throws and gives the same key for the same value.
 */
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { outcomeInputKey, OUTCOME_INPUT_TYPES } from '../src/server/outcomes.js'
import { OUTCOME_KINDS } from '../src/server/store/contracts/outcomes.js'
import { startTestServer, type TestServer } from './server-helpers.js'

const text = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }), fc.emailAddress(), fc.ipV4(), fc.ipV6(), fc.constant(''))
const anyValue = fc.oneof(text, fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.string(), { maxLength: 2 }))
const item = fc.record(
  {
    request_id: fc.oneof(text, anyValue),
    input: fc.oneof(text, anyValue),
    type: fc.oneof(fc.constantFrom(...OUTCOME_INPUT_TYPES), text),
    outcome: fc.oneof(fc.constantFrom(...OUTCOME_KINDS), text),
    note: fc.oneof(text, fc.constant(null), anyValue),
    extra: anyValue,
  },
  { requiredKeys: [] },
)
const body = fc.oneof(
  fc.record({ outcomes: fc.array(item, { maxLength: 5 }) }),
  fc.record({ outcomes: anyValue }),
  fc.dictionary(fc.string(), anyValue, { maxKeys: 3 }),
  fc.array(item, { maxLength: 2 }),
)

describe('POST /v1/outcomes with generated bodies', () => {
  let s: TestServer
  beforeAll(async () => {
    s = await startTestServer()
  })
  afterAll(async () => s?.close())

  it('answers 200 with a result per item, or a documented 400; never a crash', async () => {
    let ok = 0
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        s.tick()
        const r = await s.post('/v1/outcomes', b)
        if (r.status === 200) {
          ok++
          const items = (b as { outcomes: unknown[] }).outcomes
          expect(r.body.data.results).toHaveLength(items.length)
          for (const x of r.body.data.results) expect(['recorded', 'unchanged', 'not_found', 'invalid_input']).toContain(x.status)
        } else {
          expect(r.status, r.raw).toBe(400)
          expect(['INVALID_REQUEST', 'MISSING_FIELD']).toContain(r.body.error.code)
        }
      }),
      { numRuns: 300 },
    )
    // the generator reaches valid bodies too (counted, so the property is not vacuous)
    await fc.assert(
      fc.asyncProperty(fc.array(fc.record({ input: text, type: fc.constantFrom(...OUTCOME_INPUT_TYPES), outcome: fc.constantFrom(...OUTCOME_KINDS) }), { minLength: 1, maxLength: 5 }), async (items) => {
        s.tick()
        const r = await s.post('/v1/outcomes', { outcomes: items })
        if (items.every((i) => i.input.length >= 1 && i.input.length <= 400 && !i.input.includes('\u0000'))) {
          expect(r.status, r.raw).toBe(200)
          ok++
        } else expect(r.status).toBe(400)
      }),
      { numRuns: 200 },
    )
    expect(ok).toBeGreaterThan(100)
  })

  it('input keys never throw and are stable', () => {
    fc.assert(
      fc.property(fc.constantFrom(...OUTCOME_INPUT_TYPES), text, (type, v) => {
        const a = outcomeInputKey(type, v)
        expect(outcomeInputKey(type, v)).toEqual(a)
        if (a.ok) expect(outcomeInputKey(type, a.key)).toEqual(a)
      }),
      { numRuns: 2000 },
    )
  })
})
