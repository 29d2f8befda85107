/**
 * Cross-cutting conformance: every lookup, through the facade.
 * - test mode: every documented magic input answers schema-valid, and together they produce every verdict status
 *   and every action for every lookup;
 * - property: random strings and Unicode give a schema-valid result or a documented error, within the time limit,
 *   offline and in test mode.
 */
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { CHECKS, type SingleLookupType } from '../src/checks/registry.js'
import { ERROR_CODES, RiskcheckError } from '../src/errors.js'
import { createRiskcheck } from '../src/riskcheck.js'
import { ACTIONS, VERDICT_STATUSES } from '../src/schema.js'
import { assertValidResult } from './validate.js'

const test = createRiskcheck({ mode: 'test', now: () => new Date('2026-11-22T12:00:00Z') })
const offline = createRiskcheck({ offline: true, cache: false })
afterAll(async () => {
  await test.close()
  await offline.close()
})

const types = Object.keys(CHECKS) as SingleLookupType[]

describe('test mode: every status and every action for every lookup', () => {
  it.each(types)('%s', async (type) => {
    const statuses = new Set<string>()
    const actions = new Set<string>()
    for (const { input } of CHECKS[type].testInputs) {
      try {
        const r = await test.lookup(type, input)
        assertValidResult(r, type)
        expect(r.metadata).toMatchObject({ test_mode: true, credits_used: 0, credits_remaining: null })
        statuses.add(r.verdict.status)
        actions.add(r.recommendation.action)
      } catch (e) {
        expect(e, `${type} ${JSON.stringify(input)}`).toBeInstanceOf(RiskcheckError)
      }
    }
    expect([...statuses].sort(), type).toEqual([...VERDICT_STATUSES].sort())
    expect([...actions].sort(), type).toEqual([...ACTIONS].sort())
  })

  it('check (combined)', async () => {
    const combos = [
      { email: 'deliverable@example.com', ip: '192.0.2.1' },
      { email: 'undeliverable@example.com' },
      { email: 'disposable@example.com', ip: '192.0.2.1' },
      { email: 'unknown@example.com' },
      { ip: '192.0.2.5' },
    ]
    const statuses = new Set<string>()
    const actions = new Set<string>()
    for (const c of combos) {
      const r = await test.check(c)
      assertValidResult(r, 'check')
      statuses.add(r.verdict.status)
      actions.add(r.recommendation.action)
    }
    expect([...statuses].sort()).toEqual([...VERDICT_STATUSES].sort())
    expect([...actions].sort()).toEqual([...ACTIONS].sort())
  })
})

const anyInput = fc.oneof(
  fc.string({ maxLength: 80 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('', ' ', '@', '1.2.3.4', '::1', '+1', 'a@b.c', 'http://x', '\u0000', '\u200b@x.com', 'x'.repeat(5000)),
  fc.oneof(fc.integer(), fc.constant(null), fc.constant(undefined), fc.object()),
)

describe('property: any input gives a schema-valid result or a documented error', () => {
  for (const [mode, rc] of [
    ['offline', offline],
    ['test', test],
  ] as const) {
    it.each(types)(`${mode}: %s`, async (type) => {
      await fc.assert(
        fc.asyncProperty(anyInput, async (input) => {
          try {
            const r = await rc.lookup(type, input)
            assertValidResult(r, type)
          } catch (e) {
            if (!(e instanceof RiskcheckError) || !ERROR_CODES.includes(e.code)) throw e
          }
        }),
        { numRuns: 60 },
      )
    })
  }
})
