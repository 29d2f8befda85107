/**
 * The one-pass formatter (src/sources/phone/format.ts) must write exactly what libphonenumber-js's
 * formatNational() / formatInternational() write: checked on every example number of every region and type, with
 * and without an extension, and on random numbers of random calling codes.
 */
import { readFileSync } from 'node:fs'
import fc from 'fast-check'
import { getCountries, getCountryCallingCode, parsePhoneNumberFromString, type PhoneNumber } from 'libphonenumber-js/max'
import { describe, expect, it } from 'vitest'
import { formatPhone } from '../src/sources/phone/format.js'

interface Example {
  region: string
  cc: string
  national: string
}

const EXAMPLES = JSON.parse(readFileSync(new URL('./fixtures/phone/example-numbers.json', import.meta.url), 'utf8')) as Example[]

function same(n: PhoneNumber, label: string) {
  expect(formatPhone(n), label).toEqual({ national: n.formatNational(), international: n.formatInternational() })
}

describe('formatPhone equals libphonenumber-js formatting', () => {
  it('on every example number (all regions, all types), with and without an extension', () => {
    let count = 0
    for (const e of EXAMPLES) {
      for (const suffix of ['', ' ext. 123']) {
        const n = parsePhoneNumberFromString(`+${e.cc}${e.national}${suffix}`)
        if (!n) continue
        same(n, `${e.region} ${e.national}${suffix}`)
        count++
      }
    }
    expect(count).toBeGreaterThan(2000)
  })

  it('on non-geographic numbers', () => {
    for (const s of ['+80012345678', '+882 3 12345678', '+979 1 2345 6789', '+870 301 234 567', '+883 510 012 345']) {
      const n = parsePhoneNumberFromString(s)
      expect(n, s).toBeDefined()
      same(n!, s)
    }
  })

  it('on random numbers of random regions, valid or not (property)', () => {
    const regions = getCountries()
    fc.assert(
      fc.property(fc.constantFrom(...regions), fc.stringMatching(/^[0-9]{2,14}$/), fc.boolean(), (region, digits, ext) => {
        const n = parsePhoneNumberFromString(`+${getCountryCallingCode(region)}${digits}${ext ? ' x77' : ''}`)
        if (n) same(n, `${region} ${digits}`)
        const national = parsePhoneNumberFromString(digits, region)
        if (national) same(national, `${region} national ${digits}`)
      }),
      { numRuns: 4000 },
    )
  })

  it('on example numbers with randomised subscriber digits (property)', () => {
    fc.assert(
      fc.property(fc.constantFrom(...EXAMPLES), fc.stringMatching(/^[0-9]{3}$/), (e, tail) => {
        const n = parsePhoneNumberFromString(`+${e.cc}${e.national.slice(0, -3)}${tail}`)
        if (n) same(n, `${e.region} ${e.national}`)
      }),
      { numRuns: 3000 },
    )
  })
})
