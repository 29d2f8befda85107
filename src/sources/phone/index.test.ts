import { describe, expect, it } from 'vitest'
import { createPhoneSource, isGeographicNumber, pickTimezone } from './index.js'

const zones = new Map([
  ['Europe/London', 'GB'],
  ['Europe/Guernsey', 'GG'],
  ['Europe/Isle_of_Man', 'IM'],
  ['Australia/Perth', 'AU'],
  ['Australia/Adelaide', 'AU'],
])

describe('pickTimezone', () => {
  it('returns the only zone, or the only zone of the number’s region, else null', () => {
    expect(pickTimezone('Europe/Paris', 'FR', zones)).toBe('Europe/Paris')
    expect(pickTimezone('Europe/Paris', null, zones)).toBe('Europe/Paris')
    expect(pickTimezone('Europe/Guernsey&Europe/Isle_of_Man&Europe/London', 'GB', zones)).toBe('Europe/London')
    expect(pickTimezone('Europe/Guernsey&Europe/Isle_of_Man&Europe/London', 'GG', zones)).toBe('Europe/Guernsey')
    expect(pickTimezone('Australia/Adelaide&Australia/Perth', 'AU', zones)).toBeNull() // ambiguous within AU
    expect(pickTimezone('Europe/Guernsey&Europe/London', 'JE', zones)).toBeNull()
    expect(pickTimezone('Europe/Guernsey&Europe/London', null, zones)).toBeNull()
    expect(pickTimezone(null, 'GB', zones)).toBeNull()
    expect(pickTimezone('', 'GB', zones)).toBeNull()
  })
})

describe('isGeographicNumber (libphonenumber rules)', () => {
  it('fixed lines are geographic; mobiles only in MX, AR, BR, ID, CN', () => {
    expect(isGeographicNumber('FIXED_LINE', '44')).toBe(true)
    expect(isGeographicNumber('FIXED_LINE_OR_MOBILE', '1')).toBe(true)
    expect(isGeographicNumber('MOBILE', '44')).toBe(false)
    for (const cc of ['52', '54', '55', '62', '86']) expect(isGeographicNumber('MOBILE', cc)).toBe(true)
    expect(isGeographicNumber('TOLL_FREE', '1')).toBe(false)
    expect(isGeographicNumber(null, '1')).toBe(false)
  })
})

describe('createPhoneSource', () => {
  const phone = createPhoneSource({})

  it('gives carrier names only to mobile-like numbers, regions only to geographic ones', () => {
    const mobile = phone.describe(phone.analyze('+44 7400 123456', 'US'))
    expect(mobile).toEqual({ carrierName: 'Three', region: null, timezone: 'Europe/London' })
    const cnMobile = phone.describe(phone.analyze('+86 130 1234 5678', 'US'))
    expect(cnMobile.carrierName).toBe('China Unicom')
    expect(cnMobile.region).not.toBeNull() // Chinese mobile numbers are geographic
    expect(cnMobile.timezone).toBe('Asia/Shanghai')
    const tollFree = phone.describe(phone.analyze('+1 800 234 5678', 'US'))
    expect(tollFree).toEqual({ carrierName: null, region: null, timezone: null }) // all US zones: ambiguous
    const fixed = phone.describe(phone.analyze('+41 44 668 18 00', 'US'))
    expect(fixed).toEqual({ carrierName: null, region: 'Zurich', timezone: 'Europe/Zurich' })
    const caribbean = phone.describe(phone.analyze('+1 242 359 1234', 'US'))
    expect(caribbean).toMatchObject({ carrierName: 'BaTelCo', timezone: 'America/Nassau' })
  })

  it('describes nothing for invalid numbers', () => {
    expect(phone.describe(phone.analyze('+44 123', 'US'))).toEqual({ carrierName: null, region: null, timezone: null })
    expect(phone.describe(phone.analyze('junk', 'US'))).toEqual({ carrierName: null, region: null, timezone: null })
  })

  it('wants the live source only for US/CA numbers and only when one is configured', async () => {
    expect(phone.carrierSourceName).toBeNull()
    expect(phone.wantsLiveCarrier('US')).toBe(false)
    expect(await phone.lookupCarrier('+12015550123')).toMatchObject({ ok: false, failure: 'rejected' })
    const live = createPhoneSource({ carrierSource: { name: 'mine', lookup: async () => ({}) as never } })
    expect(live.carrierSourceName).toBe('mine')
    expect(['US', 'CA', 'PR', 'GB', null].map((r) => live.wantsLiveCarrier(r))).toEqual([true, true, false, false, false])
  })

  it('rejects a carrier source without lookup()', () => {
    expect(() => createPhoneSource({ carrierSource: { name: 'x' } })).toThrow(TypeError)
    expect(() => createPhoneSource({ carrierSource: null })).not.toThrow()
  })
})
