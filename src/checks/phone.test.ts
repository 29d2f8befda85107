import { describe, expect, it } from 'vitest'
import { phoneContext } from '../../test/phone-helpers.js'
import { schemaErrors } from '../../test/validate.js'
import { creditsFor } from '../billing.js'
import { RiskcheckError } from '../errors.js'
import { PhoneDataSchema } from '../schema.js'
import { evaluate } from '../scoring/engine.js'
import { PhoneCarrierError, emptyCarrierRecord, type LiveCarrierRecord, type PhoneCarrierSource } from '../sources/phone/carrier-source.js'
import { phoneCheck, type PhoneLookupOptions } from './phone.js'
import type { CheckContext } from './types.js'

async function lookup(ctx: CheckContext, phone: unknown, opts: PhoneLookupOptions = {}) {
  const { input } = phoneCheck.prepare(phone, opts, ctx)
  const outcome = ctx.mode === 'test' ? await phoneCheck.test(ctx, input, opts) : await phoneCheck.run(ctx, input, opts)
  expect(schemaErrors(PhoneDataSchema, outcome.details)).toEqual([])
  return { outcome, assessment: evaluate(outcome.factors, { reasons: outcome.reasons, validReason: outcome.validReason }) }
}

function fakeSource(answer: Partial<LiveCarrierRecord> | Error | 'hang'): PhoneCarrierSource & { calls: string[] } {
  const calls: string[] = []
  return {
    name: 'fake',
    calls,
    async lookup(e164) {
      calls.push(e164)
      if (answer === 'hang') return new Promise<never>(() => {})
      if (answer instanceof Error) throw answer
      return { ...emptyCarrierRecord(), ...answer }
    },
  }
}

describe('phone lookup: numbering plan and offline data', () => {
  it('answers a UK mobile fully offline', async () => {
    const { outcome, assessment } = await lookup(phoneContext(), '+44 7400 123456')
    expect(outcome.details).toEqual({
      e164: '+447400123456',
      national_format: '07400 123456',
      international_format: '+44 7400 123456',
      country_code: '44',
      country: { code: 'GB', name: 'United Kingdom' },
      valid: true,
      possible: true,
      line_type: 'mobile',
      carrier: { name: 'Three', ocn: null, mcc: null, mnc: null, type: null, ported: null, original_carrier: null },
      location: { region: null, rate_center: null, timezone: 'Europe/London' },
      routing: { lrn: '', lata: null },
      coverage: 'numbering_plan',
    })
    expect(outcome).toMatchObject({ factors: [], partial: false, dataSources: ['libphonenumber'] })
    expect(assessment).toMatchObject({ status: 'valid', action: 'approve', confidence: 'high' })
    expect(assessment.reason).toBe('The number is a valid mobile number (United Kingdom).')
  })

  it('answers a US number: region and time zone from the prefix tables, line type unknown (lower confidence)', async () => {
    const { outcome, assessment } = await lookup(phoneContext(), '(201) 555-0123')
    expect(outcome.details).toMatchObject({
      e164: '+12015550123',
      national_format: '(201) 555-0123',
      country_code: '1',
      country: { code: 'US', name: 'United States' },
      line_type: 'unknown',
      carrier: { name: '' },
      location: { region: 'New Jersey', timezone: 'America/New_York', rate_center: null },
      coverage: 'numbering_plan',
    })
    expect(outcome.factors).toEqual(['phone_line_type_unknown'])
    expect(outcome.partial).toBe(false)
    expect(assessment).toMatchObject({ status: 'valid', action: 'approve', confidence: 'medium' })
  })

  it('reports line-type factors: landline (info), voip, toll-free, premium', async () => {
    const ctx = phoneContext()
    const cases: Array<[string, string, string, string]> = [
      ['+44 121 234 5678', 'phone_landline', 'valid', 'approve'],
      ['+44 56 1234 5678', 'phone_voip', 'risky', 'verify'],
      ['+1 800 234 5678', 'phone_toll_free', 'risky', 'approve'],
      ['+1 900 234 5678', 'phone_premium_rate', 'risky', 'verify'],
      ['+44 70 1234 5678', 'phone_voip', 'risky', 'verify'], // UK personal number → voip
    ]
    for (const [n, factor, status, action] of cases) {
      const { outcome, assessment } = await lookup(ctx, n)
      expect(outcome.factors, n).toEqual([factor])
      expect([assessment.status, assessment.action], n).toEqual([status, action])
    }
    const birmingham = await lookup(ctx, '+44 121 234 5678')
    expect(birmingham.outcome.details.location.region).toBe('Birmingham')
  })

  it('answers an invalid number as a result (free), with phone_invalid only', async () => {
    const ctx = phoneContext()
    for (const junk of ['not a number', '😀😀😀', '+1 999 555 0100', '+44 123', '12']) {
      const { outcome, assessment } = await lookup(ctx, junk)
      expect(outcome.details.valid, junk).toBe(false)
      expect(outcome.details.e164, junk).toBeNull()
      expect(outcome.details.line_type, junk).toBe('unknown')
      expect(outcome.factors, junk).toEqual(['phone_invalid'])
      expect([assessment.status, assessment.action], junk).toEqual(['invalid', 'block'])
      expect(creditsFor('phone', outcome.details), junk).toBe(0)
    }
    const letters = await lookup(ctx, 'not a number')
    expect(letters.outcome.details.country).toEqual({ code: '', name: '' })
    expect(letters.outcome.details.country_code).toBeNull()
    expect(letters.assessment.reason).toBe('The input is not a phone number.')
    const short = await lookup(ctx, '+44 123')
    expect(short.outcome.details).toMatchObject({ country_code: '44', possible: false })
    expect(short.assessment.reason).toBe('The number is not a valid number (calling code +44): wrong length or unknown range.')
    const unassigned = await lookup(ctx, '+1 999 555 0100')
    expect(unassigned.assessment.reason).toBe('The number has a possible length but is not a valid number (calling code +1).')
  })

  it('bills a valid number 1 credit', async () => {
    const { outcome } = await lookup(phoneContext(), '+44 7400 123456')
    expect(creditsFor('phone', outcome.details)).toBe(1)
  })

  it('gives non-geographic numbers an empty country', async () => {
    const { outcome } = await lookup(phoneContext(), '+800 1234 5678')
    expect(outcome.details).toMatchObject({ country: { code: '', name: '' }, country_code: '800', line_type: 'toll_free', valid: true })
  })
})

describe('phone lookup: country option and mismatch', () => {
  it('reads national numbers with the given country', async () => {
    const { outcome } = await lookup(phoneContext(), '020 7946 0958', { country: 'gb' })
    expect(outcome.details.e164).toBe('+442079460958')
    expect(outcome.factors).toEqual(['phone_landline'])
  })

  it('flags a number of another country only when a country was given', async () => {
    const ctx = phoneContext()
    const given = await lookup(ctx, '+44 20 7946 0958', { country: 'US' })
    expect(given.outcome.factors).toEqual(['phone_landline', 'phone_country_mismatch'])
    expect(given.assessment.status).toBe('risky')
    expect((await lookup(ctx, '+44 20 7946 0958')).outcome.factors).toEqual(['phone_landline'])
    expect((await lookup(ctx, '+44 20 7946 0958', { country: null })).outcome.factors).toEqual(['phone_landline'])
    // a Canadian area code read with country US is a number of another country
    expect((await lookup(ctx, '613 555 0123', { country: 'US' })).outcome.factors).toContain('phone_country_mismatch')
    // an invalid number is never a mismatch
    expect((await lookup(ctx, '+44 123', { country: 'US' })).outcome.factors).toEqual(['phone_invalid'])
  })

  it('premium + mismatch reaches review', async () => {
    const { assessment } = await lookup(phoneContext(), '+44 901 234 5678', { country: 'US' })
    expect([assessment.status, assessment.action, assessment.score]).toEqual(['risky', 'review', 70])
  })

  it('rejects a bad country, an empty and a 41-character phone with INVALID_INPUT', () => {
    const ctx = phoneContext()
    for (const [phone, opts] of [
      ['+44 20 7946 0958', { country: 'UK' }],
      ['+44 20 7946 0958', { country: 'GBR' }],
      ['', {}],
      ['1'.repeat(41), {}],
    ] as const) {
      expect(() => phoneCheck.prepare(phone, opts, ctx)).toThrow(RiskcheckError)
      try {
        phoneCheck.prepare(phone, opts, ctx)
      } catch (e) {
        expect((e as RiskcheckError).code).toBe('INVALID_INPUT')
      }
    }
  })

  it('keys the cache by E.164 (+ extension) and the explicit country', () => {
    const ctx = phoneContext()
    const key = (p: string, o: PhoneLookupOptions = {}) => phoneCheck.prepare(p, o, ctx).cacheKey
    expect(key('(201) 555-0123')).toBe(key('+1 201-555-0123'))
    expect(key('201.555.0123')).toBe('+12015550123|')
    expect(key('+1 201 555 0123 x7')).toBe('+12015550123;ext=7|')
    expect(key('+12015550123', { country: 'us' })).toBe('+12015550123|US')
    expect(key(' junk ')).toBe('US:junk|')
    expect(key('junk', { country: 'FR' })).toBe('FR:junk|FR')
  })
})

describe('phone lookup: live carrier source (US/CA)', () => {
  it('fills the live record for a US number and sets coverage live', async () => {
    const src = fakeSource({ lineType: 'mobile', carrierType: 'mobile', carrierName: 'T-Mobile USA, Inc.', mcc: '310', mnc: '260' })
    const { outcome, assessment } = await lookup(phoneContext({ carrierSource: src }), '+1 201 555 0123')
    expect(src.calls).toEqual(['+12015550123'])
    expect(outcome.details).toMatchObject({
      line_type: 'mobile',
      carrier: { name: 'T-Mobile USA, Inc.', type: 'mobile', mcc: '310', mnc: '260', ocn: null, ported: null, original_carrier: null },
      routing: { lrn: '', lata: null },
      location: { region: 'New Jersey', timezone: 'America/New_York' },
      coverage: 'live',
    })
    expect(outcome).toMatchObject({ factors: [], partial: false, dataSources: ['libphonenumber', 'fake'] })
    expect(assessment).toMatchObject({ status: 'valid', confidence: 'high' })
  })

  it('fills porting and routing fields when the source knows them', async () => {
    const src = fakeSource({
      lineType: 'voip',
      carrierType: 'voip',
      carrierName: 'Acme VoIP',
      ocn: '1234',
      ported: true,
      originalCarrier: 'Verizon',
      lrn: '4155550000',
      lata: '722',
      rateCenter: 'SNFC CNTRL',
    })
    const { outcome, assessment } = await lookup(phoneContext({ carrierSource: src }), '+1 613 555 0123')
    expect(outcome.details).toMatchObject({
      line_type: 'voip',
      carrier: { name: 'Acme VoIP', ocn: '1234', ported: true, original_carrier: 'Verizon' },
      routing: { lrn: '4155550000', lata: '722' },
      location: { rate_center: 'SNFC CNTRL', region: 'Ontario' },
      coverage: 'live',
    })
    expect(outcome.factors).toEqual(['phone_voip'])
    expect(assessment.action).toBe('verify')
  })

  it('keeps a definite plan type when the live answer is unknown', async () => {
    const src = fakeSource({ lineType: 'unknown', carrierType: 'unknown' })
    const { outcome } = await lookup(phoneContext({ carrierSource: src }), '+1 800 234 5678')
    expect(outcome.details.line_type).toBe('toll_free')
    expect(outcome.details.coverage).toBe('live')
  })

  it('turns an error into partial, keeping the numbering-plan answer', async () => {
    const src = fakeSource(new PhoneCarrierError('http', 'HTTP 500', { status: 500 }))
    const { outcome, assessment } = await lookup(phoneContext({ carrierSource: src }), '+1 201 555 0123')
    expect(outcome.details).toMatchObject({ e164: '+12015550123', line_type: 'unknown', coverage: 'numbering_plan', location: { region: 'New Jersey' } })
    expect(outcome.partial).toBe(true)
    expect(outcome.factors).toEqual(['phone_line_type_unknown', 'phone_carrier_unavailable'])
    expect(assessment).toMatchObject({ status: 'unknown', action: 'approve', confidence: 'low' })
    expect(assessment.reason).toBe('The live carrier source failed; numbering-plan data only.')
    expect(creditsFor('phone', outcome.details)).toBe(1)
  })

  it('turns a timeout into partial', async () => {
    // The source never answers: only the 80 ms limit can end the lookup (a hang fails the test by its timeout).
    const src = fakeSource('hang')
    const { outcome, assessment } = await lookup(phoneContext({ carrierSource: src, carrierTimeoutMs: 80 }), '+1 201 555 0123')
    expect(outcome.partial).toBe(true)
    expect(outcome.factors).toContain('phone_carrier_unavailable')
    expect(assessment.reason).toMatch(/did not answer in time/)
  })

  it('keeps the riskier reason when the live source fails on a risky number', async () => {
    const src = fakeSource(new Error('down'))
    const { outcome, assessment } = await lookup(phoneContext({ carrierSource: src }), '+1 900 234 5678')
    expect(outcome.factors).toEqual(['phone_premium_rate', 'phone_carrier_unavailable'])
    expect(assessment.status).toBe('risky')
    expect(assessment.reason).toBe('The number is a premium-rate number.')
  })

  it('is not asked for other countries or invalid numbers', async () => {
    const src = fakeSource({ lineType: 'mobile' })
    const ctx = phoneContext({ carrierSource: src })
    for (const n of ['+44 7400 123456', '+1 242 359 1234', '+1 999 555 0100', 'junk']) {
      const { outcome } = await lookup(ctx, n)
      expect(outcome.details.coverage, n).toBe('numbering_plan')
      expect(outcome.partial, n).toBe(false)
    }
    expect(src.calls).toEqual([])
  })

  it('is not asked offline: a complete numbering-plan answer (not partial, no unavailable factor), never called', async () => {
    const src = fakeSource({ lineType: 'mobile' })
    const { outcome } = await lookup(phoneContext({ carrierSource: src, offline: true }), '+1 201 555 0123')
    expect(src.calls).toEqual([])
    expect(outcome.partial).toBe(false)
    expect(outcome.details.coverage).toBe('numbering_plan')
    expect(outcome.factors).not.toContain('phone_carrier_unavailable')
    expect(outcome.dataSources).toEqual(['libphonenumber'])
  })

  it('offline without a carrier source is a complete numbering-plan answer', async () => {
    const { outcome } = await lookup(phoneContext({ offline: true }), '+1 201 555 0123')
    expect(outcome.partial).toBe(false)
  })
})

describe('phone lookup: test mode', () => {
  const NOTE = /→ (valid|invalid|risky|unknown)\b[^,]*, (approve|verify|review|block)/

  it('answers every documented test input as its note says, covering every status and action', async () => {
    const src = fakeSource({ lineType: 'landline' }) // configured but never called in test mode
    const ctx = phoneContext({ mode: 'test', carrierSource: src })
    const statuses = new Set<string>()
    const actions = new Set<string>()
    for (const t of phoneCheck.testInputs) {
      const m = NOTE.exec(t.note)
      if (t.input === '') {
        expect(() => phoneCheck.prepare(t.input, {}, ctx)).toThrow(RiskcheckError)
        continue
      }
      expect(m, `note of ${t.input} states the verdict and action`).not.toBeNull()
      const { assessment } = await lookup(ctx, t.input)
      expect([assessment.status, assessment.action], t.input).toEqual([m![1], m![2]])
      statuses.add(assessment.status)
      actions.add(assessment.action)
    }
    expect([...statuses].sort()).toEqual(['invalid', 'risky', 'unknown', 'valid'])
    expect([...actions].sort()).toEqual(['approve', 'block', 'review', 'verify'])
    expect(src.calls).toEqual([])
  })

  it('simulates live records, porting data and failures for the +1 201 555 01xx scenarios', async () => {
    const ctx = phoneContext({ mode: 'test' })
    const ported = await lookup(ctx, '(201) 555-0103')
    expect(ported.outcome.details).toMatchObject({
      coverage: 'live',
      carrier: { ported: true, original_carrier: 'Riskcheck Test Telephone', ocn: '9999' },
      routing: { lrn: '2015550199', lata: '224' },
      location: { rate_center: 'JERSEY CITY' },
    })
    const timeout = await lookup(ctx, '+12015550104')
    expect(timeout.outcome).toMatchObject({ partial: true, details: { coverage: 'numbering_plan' } })
    // an explicit country replaces the assumed one of the review scenario
    const gb = await lookup(ctx, '+44 901 234 5678', { country: 'GB' })
    expect(gb.assessment.action).toBe('verify')
    // other inputs get the real offline answer
    const other = await lookup(ctx, '+41 44 668 18 00')
    expect(other.outcome.details).toMatchObject({ location: { region: 'Zurich', timezone: 'Europe/Zurich' }, coverage: 'numbering_plan' })
  })

  it('declares its CLI command and country flag', () => {
    expect(phoneCheck.cli.command).toBe('phone')
    expect(phoneCheck.cli.flags?.map((f) => f.option)).toEqual(['country'])
  })
})
