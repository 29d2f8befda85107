/**
 * The phone lookups through the public API: result shape (schema), billing, errors, test mode, and the Twilio
 * adapter plugged in as `phone.carrierSource` against a loopback Twilio Lookup v2.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRiskcheck } from '../src/index.js'
import { RiskcheckError } from '../src/errors.js'
import { createTwilioCarrierSource } from '../src/sources/phone/index.js'
import { assertValidResult } from './validate.js'

let server: Server
let baseUrl: string
/** The numbers the loopback Twilio was asked about, in order. */
const asked: string[] = []

beforeAll(async () => {
  server = createServer((req, res) => {
    const e164 = decodeURIComponent(/\/v2\/PhoneNumbers\/([^?]+)/.exec(req.url ?? '')?.[1] ?? '')
    asked.push(e164)
    if (e164 === '+12015550177') return // never answers
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(
      JSON.stringify({
        calling_country_code: '1',
        country_code: 'US',
        phone_number: e164,
        valid: true,
        validation_errors: [],
        line_type_intelligence: { error_code: null, mobile_country_code: '313', mobile_network_code: '981', carrier_name: 'Bandwidth', type: 'nonFixedVoip' },
      }),
    )
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise<void>((r) => server.close(() => r()))
})

describe('rc.phone / rc.phoneType', () => {
  it('return schema-valid results, billed as documented', async () => {
    const rc = createRiskcheck({ cache: false, credits: 10 })
    const valid = await rc.phone('+44 7400 123456')
    assertValidResult(valid, 'phone')
    expect(valid.metadata).toMatchObject({ credits_used: 1, credits_remaining: 9, data_sources: ['libphonenumber'] })
    const invalid = await rc.phone('not a number')
    assertValidResult(invalid, 'phone')
    expect(invalid.metadata.credits_used).toBe(0)
    expect(invalid.recommendation.action).toBe('block')
    const type = await rc.phoneType('not a number')
    assertValidResult(type, 'phone_type')
    expect(type.metadata.credits_used).toBe(1)
    const usType = await rc.phoneType('201-555-0123', { country: 'us' })
    expect(usType.details).toEqual({ e164: '+12015550123', country: 'US', valid: true, line_type: 'unknown', numbering_plan_type: 'FIXED_LINE_OR_MOBILE', lists: [], velocity: null })
    await rc.close()
  })

  it('reject a bad country and an out-of-range length with INVALID_INPUT', async () => {
    const rc = createRiskcheck({ cache: false })
    await expect(rc.phone('+44 7400 123456', { country: 'UK' })).rejects.toMatchObject({ code: 'INVALID_INPUT', status: 422 })
    await expect(rc.phoneType('', {})).rejects.toBeInstanceOf(RiskcheckError)
    await expect(rc.phone('1'.repeat(41))).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    await rc.close()
  })

  it('test mode answers the documented scenarios without network or credits', async () => {
    const rc = createRiskcheck({ mode: 'test' })
    const r = await rc.phone('+1 201 555 0102')
    assertValidResult(r, 'phone')
    expect(r.details).toMatchObject({ coverage: 'live', line_type: 'voip', carrier: { type: 'nonFixedVoip' } })
    expect([r.verdict.status, r.recommendation.action, r.metadata.test_mode, r.metadata.credits_used]).toEqual(['risky', 'verify', true, 0])
    const review = await rc.phoneType('+44 901 234 5678')
    expect(review.recommendation.action).toBe('review')
    await rc.close()
  })

  it('use the Twilio adapter for US numbers, and fall back to partial when it times out', async () => {
    const twilio = createTwilioCarrierSource({ accountSid: 'AC1', authToken: 't', baseUrl })
    // The answering number gets a timeout no loaded machine reaches on loopback; the time-out case gets a short one
    // against a number the server never answers, so it times out however slow or fast the machine is.
    const rc = createRiskcheck({ cache: false, phone: { carrierSource: twilio, carrierTimeoutMs: 60_000 } })
    const impatient = createRiskcheck({ cache: false, phone: { carrierSource: twilio, carrierTimeoutMs: 200 } })
    asked.length = 0
    const live = await rc.phone('+1 201 555 0123')
    assertValidResult(live, 'phone')
    expect(live.details).toMatchObject({ coverage: 'live', line_type: 'voip', carrier: { name: 'Bandwidth', mcc: '313', mnc: '981' } })
    expect(live.metadata.data_sources).toEqual(['libphonenumber', 'twilio'])
    expect(live.risk.factors).toEqual(['phone_voip'])
    expect(asked).toEqual(['+12015550123'])
    const slow = await impatient.phone('+1 201 555 0177')
    assertValidResult(slow, 'phone')
    expect(slow.partial).toBe(true)
    expect(slow.verdict.status).toBe('unknown')
    expect(slow.details).toMatchObject({ coverage: 'numbering_plan', e164: '+12015550177', location: { region: 'New Jersey' } })
    // phone/type never goes live. (Whether the time-out's request reached the server before it was given up depends
    // on the machine's load, so only the answered number is counted.)
    await rc.phoneType('+1 201 555 0123')
    expect(asked.filter((n) => n === '+12015550123')).toHaveLength(1)
    await rc.close()
    await impatient.close()
  })
})
