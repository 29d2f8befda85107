/**
 * The numbering-plan type riskcheck decides with compiled patterns (src/sources/phone/number-type.ts) is the one
 * libphonenumber's `PhoneNumber.getType()` decides, for every region and non-geographic calling code: its example
 * numbers of every type, and random national numbers of every possible length (valid ones and not). Its parse
 * (`parseNumber`, the region of a shared calling code picked with the same plans) answers as libphonenumber's parse.
 */
import { getCountries, getCountryCallingCode, getExampleNumber, parsePhoneNumberFromString, type PhoneNumber } from 'libphonenumber-js/max'
import examples from 'libphonenumber-js/examples.mobile.json'
import metadata from 'libphonenumber-js/metadata.max.json'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { numberTypeOf, parseNumber } from '../src/sources/phone/number-type.js'
import { xorshift } from './xorshift.js'

/** Every calling code of the metadata (regions share some; the non-geographic ones have no region). */
const CALLING_CODES = Object.keys((metadata as unknown as { country_calling_codes: Record<string, string[]> }).country_calling_codes)

describe('numberTypeOf agrees with PhoneNumber.getType()', () => {
  it('for the example mobile number of every region', () => {
    let compared = 0
    for (const region of getCountries()) {
      const n = getExampleNumber(region, examples)
      if (!n) continue
      expect([region, numberTypeOf(n)]).toEqual([region, n.getType()])
      compared++
    }
    expect(compared).toBeGreaterThan(200)
  })

  it('for random national numbers of 4 to 17 digits in every calling code, valid or not', () => {
    const rnd = xorshift(42)
    const seen = new Map<string, number>()
    let compared = 0
    for (const code of CALLING_CODES) {
      for (let k = 0; k < 160; k++) {
        const length = 4 + (rnd() % 14)
        let digits = String(1 + (rnd() % 9))
        while (digits.length < length) digits += String(rnd() % 10)
        const n: PhoneNumber | undefined = parsePhoneNumberFromString(`+${code}${digits}`)
        if (!n) continue
        const type = n.getType()
        expect([n.number, numberTypeOf(n)]).toEqual([n.number, type])
        seen.set(type ?? 'invalid', (seen.get(type ?? 'invalid') ?? 0) + 1)
        compared++
      }
    }
    // the sample reaches invalid numbers and the common types alike
    expect(compared).toBeGreaterThan(30_000)
    for (const t of ['invalid', 'FIXED_LINE', 'MOBILE', 'FIXED_LINE_OR_MOBILE', 'TOLL_FREE', 'PREMIUM_RATE', 'VOIP']) expect(seen.get(t) ?? 0).toBeGreaterThan(10)
  })

  it('for numbers read in a region without +, and one with no calling code at all', () => {
    const rnd = xorshift(7)
    for (const region of getCountries()) {
      for (let k = 0; k < 20; k++) {
        const national = `${getCountryCallingCode(region) === '1' ? '' : '0'}${String(rnd() % 1e10).padStart(10, '0')}`
        const n = parsePhoneNumberFromString(national, region)
        if (n) expect([n.number, numberTypeOf(n)]).toEqual([n.number, n.getType()])
      }
    }
    expect(numberTypeOf({ country: undefined, countryCallingCode: '', nationalNumber: '2015550123' } as unknown as PhoneNumber)).toBeUndefined()
  })
})

/** What riskcheck reads of a parsed number, and what its methods answer (undefined: no number). */
function reading(n: PhoneNumber | undefined) {
  if (!n) return undefined
  return {
    country: n.country,
    callingCode: n.countryCallingCode,
    national: n.nationalNumber,
    number: n.number,
    ext: n.ext,
    carrierCode: n.carrierCode,
    possible: n.isPossible(),
    valid: n.isValid(),
    type: n.getType(),
    formats: [n.formatNational(), n.formatInternational(), n.format('E.164')],
  }
}

describe('parseNumber answers as parsePhoneNumberFromString', () => {
  const SHARED = CALLING_CODES.filter((c) => (metadata as unknown as { country_calling_codes: Record<string, string[]> }).country_calling_codes[c]!.length > 1)
  const same = (text: string, defaultCountry?: string) => {
    const options = { extract: false, ...(defaultCountry ? { defaultCountry } : {}) } as const
    expect([text, defaultCountry, reading(parseNumber(text, options))]).toEqual([text, defaultCountry, reading(parsePhoneNumberFromString(text, options as Parameters<typeof parsePhoneNumberFromString>[1]))])
  }

  it('for the example numbers of every region, written internationally and in the region', () => {
    for (const region of getCountries()) {
      const n = getExampleNumber(region, examples)
      if (!n) continue
      same(n.number)
      same(n.formatNational(), region)
    }
  })

  it('for random numbers of every calling code shared by several regions (+1, +44, +7 …), valid or not, with and without +', () => {
    const rnd = xorshift(99)
    let elsewhere = 0
    for (const code of SHARED) {
      const regions = (metadata as unknown as { country_calling_codes: Record<string, string[]> }).country_calling_codes[code]!
      for (let k = 0; k < 400; k++) {
        const length = 4 + (rnd() % 12)
        let digits = String(1 + (rnd() % 9))
        while (digits.length < length) digits += String(rnd() % 10)
        same(`+${code}${digits}`)
        same(digits, regions[rnd() % regions.length])
        const n = parsePhoneNumberFromString(`+${code}${digits}`)
        if (n && n.country !== regions[0]) elsewhere++
      }
    }
    // the sample reaches numbers of the other regions and of none, not only the main region's
    expect(elsewhere).toBeGreaterThan(500)
  })

  it('for any text in any region (property)', () => {
    const regions = getCountries()
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), fc.stringMatching(/^\+?[0-9 ()-]{0,20}$/), fc.nat(regions.length - 1), (text, digits, r) => {
        same(text, regions[r])
        same(digits, regions[r])
        same(digits)
      }),
      { numRuns: 2000 },
    )
  })
})
