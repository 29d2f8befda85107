import { describe, expect, it } from 'vitest'
import { phoneContext } from '../../test/phone-helpers.js'
import { schemaErrors } from '../../test/validate.js'
import { creditsFor } from '../billing.js'
import { RiskcheckError } from '../errors.js'
import { PhoneTypeDataSchema } from '../schema.js'
import { evaluate } from '../scoring/engine.js'
import type { PhoneCarrierSource } from '../sources/phone/carrier-source.js'
import { phoneTypeCheck } from './phone-type.js'
import type { PhoneLookupOptions } from './phone.js'
import type { CheckContext } from './types.js'

async function lookup(ctx: CheckContext, phone: unknown, opts: PhoneLookupOptions = {}) {
  const { input } = phoneTypeCheck.prepare(phone, opts, ctx)
  const outcome = ctx.mode === 'test' ? await phoneTypeCheck.test(ctx, input, opts) : await phoneTypeCheck.run(ctx, input, opts)
  expect(schemaErrors(PhoneTypeDataSchema, outcome.details)).toEqual([])
  return { outcome, assessment: evaluate(outcome.factors, { reasons: outcome.reasons, validReason: outcome.validReason }) }
}

describe('phone line-type lookup', () => {
  it('reports the raw numbering-plan type beside the mapped line type', async () => {
    const ctx = phoneContext()
    const cases: Array<[string, string, string | null, string]> = [
      ['+44 7400 123456', 'mobile', 'MOBILE', 'GB'],
      ['+1 201 555 0123', 'unknown', 'FIXED_LINE_OR_MOBILE', 'US'],
      ['+44 121 234 5678', 'landline', 'FIXED_LINE', 'GB'],
      ['+44 56 1234 5678', 'voip', 'VOIP', 'GB'],
      ['+1 800 234 5678', 'toll_free', 'TOLL_FREE', 'US'],
      ['+1 900 234 5678', 'premium', 'PREMIUM_RATE', 'US'],
      ['+61 1300 123 456', 'premium', 'SHARED_COST', 'AU'],
      ['+1 500 234 5678', 'voip', 'PERSONAL_NUMBER', 'US'],
      ['+44 76 4012 3456', 'unknown', 'PAGER', 'GB'],
      ['+44 55 1234 5678', 'unknown', 'UAN', 'GB'],
    ]
    for (const [n, line, plan, country] of cases) {
      const { outcome } = await lookup(ctx, n)
      expect(outcome.details, n).toEqual({ e164: outcome.details.e164, country, valid: true, line_type: line, numbering_plan_type: plan })
      expect(outcome.details.e164, n).toMatch(/^\+\d+$/)
      expect(outcome.dataSources).toEqual(['libphonenumber'])
      expect(outcome.partial).toBe(false)
    }
  })

  it('answers invalid input as a result, billed 1 credit anyway', async () => {
    const { outcome, assessment } = await lookup(phoneContext(), 'hello')
    expect(outcome.details).toEqual({ e164: null, country: null, valid: false, line_type: 'unknown', numbering_plan_type: null })
    expect(outcome.factors).toEqual(['phone_invalid'])
    expect([assessment.status, assessment.action]).toEqual(['invalid', 'block'])
    expect(creditsFor('phone_type', outcome.details)).toBe(1)
  })

  it('gives non-geographic numbers a null country', async () => {
    const { outcome } = await lookup(phoneContext(), '+800 1234 5678')
    expect(outcome.details).toMatchObject({ country: null, valid: true, line_type: 'toll_free' })
  })

  it('never asks a live carrier source, and has the phone lookup’s country handling', async () => {
    const calls: string[] = []
    const src: PhoneCarrierSource = {
      lookup: async (e) => {
        calls.push(e)
        throw new Error('must not be called')
      },
    }
    const ctx = phoneContext({ carrierSource: src })
    const us = await lookup(ctx, '201 555 0123')
    expect(us.outcome.details.line_type).toBe('unknown')
    expect(calls).toEqual([])
    const mismatch = await lookup(ctx, '+44 7400 123456', { country: 'FR' })
    expect(mismatch.outcome.factors).toEqual(['phone_country_mismatch'])
    expect((await lookup(ctx, '07400 123456', { country: 'GB' })).outcome.details.e164).toBe('+447400123456')
    expect(() => phoneTypeCheck.prepare('+44 7400 123456', { country: 'EU' }, ctx)).toThrow(RiskcheckError)
    expect(() => phoneTypeCheck.prepare('x'.repeat(41), {}, ctx)).toThrow(RiskcheckError)
  })

  it('answers every documented test input as its note says (every action and every status)', async () => {
    const ctx = phoneContext({ mode: 'test' })
    const NOTE = /→ (valid|invalid|risky|unknown)\b[^,]*, (approve|verify|review|block)/
    const statuses = new Set<string>()
    const actions = new Set<string>()
    for (const t of phoneTypeCheck.testInputs) {
      if (t.input === '') {
        expect(() => phoneTypeCheck.prepare(t.input, {}, ctx)).toThrow(RiskcheckError)
        continue
      }
      const m = NOTE.exec(t.note)
      expect(m, t.note).not.toBeNull()
      const { assessment } = await lookup(ctx, t.input)
      expect([assessment.status, assessment.action], t.input).toEqual([m![1], m![2]])
      statuses.add(assessment.status)
      actions.add(assessment.action)
    }
    // `unknown`: the plan cannot tell the line type (e.g. FIXED_LINE_OR_MOBILE)
    expect([...statuses].sort()).toEqual(['invalid', 'risky', 'unknown', 'valid'])
    expect([...actions].sort()).toEqual(['approve', 'block', 'review', 'verify'])
  })

  it('declares its CLI command', () => {
    expect(phoneTypeCheck.cli.command).toBe('phone-type')
    expect(phoneTypeCheck.type).toBe('phone_type')
  })
})
