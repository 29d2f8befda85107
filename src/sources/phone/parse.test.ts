import { describe, expect, it } from 'vitest'
import { RiskcheckError } from '../../errors.js'
import {
  LINE_TYPE_BY_PLAN_TYPE,
  analyzePhone,
  lineTypeOf,
  normalizePhoneCountry,
  regionName,
  validatePhoneInput,
} from './parse.js'

function rejection(fn: () => unknown): RiskcheckError {
  try {
    fn()
  } catch (e) {
    if (e instanceof RiskcheckError) return e
    throw e
  }
  throw new Error('did not throw')
}

describe('validatePhoneInput', () => {
  it('accepts 1 to 40 characters, counting code points', () => {
    expect(validatePhoneInput('1')).toBe('1')
    expect(validatePhoneInput('9'.repeat(40))).toBe('9'.repeat(40))
    // 40 emoji are 80 UTF-16 units but 40 characters
    expect(validatePhoneInput('😀'.repeat(40))).toBe('😀'.repeat(40))
  })

  it('rejects empty and 41-character inputs with INVALID_INPUT (422)', () => {
    for (const bad of ['', '9'.repeat(41), '😀'.repeat(41), '+1 201 555 0123 ' + 'x'.repeat(30)]) {
      const e = rejection(() => validatePhoneInput(bad))
      expect(e.code).toBe('INVALID_INPUT')
      expect(e.status).toBe(422)
      expect(e.field).toBe('phone')
    }
  })

  it('rejects a missing phone with MISSING_FIELD and a non-string with INVALID_INPUT', () => {
    expect(rejection(() => validatePhoneInput(undefined)).code).toBe('MISSING_FIELD')
    expect(rejection(() => validatePhoneInput(null)).code).toBe('MISSING_FIELD')
    expect(rejection(() => validatePhoneInput(12015550123)).code).toBe('INVALID_INPUT')
    expect(rejection(() => validatePhoneInput(['+1'])).code).toBe('INVALID_INPUT')
  })
})

describe('normalizePhoneCountry', () => {
  it('defaults to US and upper-cases', () => {
    expect(normalizePhoneCountry(undefined)).toBe('US')
    expect(normalizePhoneCountry(null)).toBe('US')
    expect(normalizePhoneCountry('gb')).toBe('GB')
    expect(normalizePhoneCountry('XK')).toBe('XK') // Kosovo: not ISO-assigned, but libphonenumber has a plan
  })

  it('rejects codes without a numbering plan, wrong lengths and non-strings with INVALID_INPUT', () => {
    for (const bad of ['UK', 'ZZ', 'AQ', 'USA', 'U', '', '1', 42, {}]) {
      const e = rejection(() => normalizePhoneCountry(bad))
      expect(e.code).toBe('INVALID_INPUT')
      expect(e.field).toBe('country')
    }
    expect(rejection(() => normalizePhoneCountry('UK')).message).toMatch(/did you mean GB/)
  })
})

describe('analyzePhone', () => {
  it('formats a valid number every way and names its country', () => {
    const a = analyzePhone('020 7946 0958', 'GB')
    expect(a).toMatchObject({
      valid: true,
      possible: true,
      international: false,
      e164: '+442079460958',
      nationalFormat: '020 7946 0958',
      internationalFormat: '+44 20 7946 0958',
      callingCode: '44',
      nationalNumber: '2079460958',
      region: 'GB',
      planType: 'FIXED_LINE',
      lineType: 'landline',
      extension: null,
    })
    expect(regionName('GB')).toBe('United Kingdom')
  })

  it('reads numbers without + in the default country (US unless given)', () => {
    expect(analyzePhone('(201) 555-0123').e164).toBe('+12015550123')
    expect(analyzePhone('201-555-0123', 'US').region).toBe('US')
    expect(analyzePhone('06 12 34 56 78', 'FR')).toMatchObject({ e164: '+33612345678', region: 'FR', lineType: 'mobile' })
    // the same digits read as US are not a valid number
    expect(analyzePhone('06 12 34 56 78', 'US').valid).toBe(false)
    // international dialling prefixes of the default country work too
    expect(analyzePhone('011 44 20 7946 0958', 'US')).toMatchObject({ e164: '+442079460958', international: false, region: 'GB' })
    expect(analyzePhone('00 44 20 7946 0958', 'DE').region).toBe('GB')
  })

  it('ignores the default country for numbers written with +', () => {
    const a = analyzePhone('+44 20 7946 0958', 'FR')
    expect(a).toMatchObject({ international: true, region: 'GB', e164: '+442079460958' })
    expect(analyzePhone('＋44 20 7946 0958', 'US').international).toBe(true) // full-width plus
  })

  it('keeps an extension out of E.164 but in the formats', () => {
    const a = analyzePhone('+1 (201) 555-0123 x12')
    expect(a.e164).toBe('+12015550123')
    expect(a.extension).toBe('12')
    expect(a.nationalFormat).toBe('(201) 555-0123 ext. 12')
    expect(analyzePhone('tel:+1-201-555-0123;ext=9').extension).toBe('9')
  })

  it('reads a tel: URI (RFC 3966) as the number it names, national or international, any case', () => {
    // the counterexample a property run found: libphonenumber-js reads no scheme with extract: false, we strip it
    const plain = analyzePhone('400000000', 'AU')
    expect(plain).toMatchObject({ valid: true, e164: '+61400000000', planType: 'MOBILE' })
    for (const uri of ['tel:400000000', 'TEL:400000000', ' tel: 0400000000 ', 'tel:+61400000000']) {
      expect(analyzePhone(uri, 'AU'), uri).toMatchObject({ valid: true, e164: '+61400000000', planType: 'MOBILE', region: 'AU' })
    }
    expect(analyzePhone('tel:', 'AU').valid).toBe(false)
    expect(analyzePhone('4tel:00000000', 'AU').valid).toBe(false) // only a leading scheme
  })

  it('accepts other Unicode decimal digits', () => {
    expect(analyzePhone('+٤٤٢٠٧٩٤٦٠٩٥٨').e164).toBe('+442079460958')
  })

  it('gives valid:false with null formats for letters, emoji, junk around a number, and unknown ranges', () => {
    for (const junk of ['hello', '😀', '+1 201 😀 555 0123', 'call +1 201 555 0123 now', '+12015550123abc', '+', '+999 123456', '   ']) {
      const a = analyzePhone(junk)
      expect(a.valid, junk).toBe(false)
      expect(a.e164, junk).toBeNull()
      expect(a.nationalFormat, junk).toBeNull()
      expect(a.lineType, junk).toBe('unknown')
      expect(a.planType, junk).toBeNull()
    }
    // a possible length in an area code that does not exist
    const a = analyzePhone('+1 999 555 0123')
    expect(a).toMatchObject({ valid: false, possible: true, callingCode: '1', region: null, e164: null })
    const short = analyzePhone('+44 123')
    expect(short).toMatchObject({ valid: false, possible: false, callingCode: '44' })
  })

  it('handles non-geographic numbers (no region)', () => {
    const a = analyzePhone('+800 1234 5678')
    expect(a).toMatchObject({ valid: true, region: null, callingCode: '800', planType: 'TOLL_FREE', lineType: 'toll_free' })
  })

  it('knows the US/CA split of NANP and Crown-dependency ranges of +44', () => {
    expect(analyzePhone('+1 613 555 0123').region).toBe('CA')
    expect(analyzePhone('+1 242 359 1234').region).toBe('BS')
    expect(analyzePhone('+44 7911 123456').region).toBe('GG')
  })
})

describe('line type mapping', () => {
  it('covers every libphonenumber type with a spec line type', () => {
    expect(LINE_TYPE_BY_PLAN_TYPE).toEqual({
      MOBILE: 'mobile',
      FIXED_LINE: 'landline',
      FIXED_LINE_OR_MOBILE: 'unknown',
      VOIP: 'voip',
      TOLL_FREE: 'toll_free',
      PREMIUM_RATE: 'premium',
      SHARED_COST: 'premium',
      PERSONAL_NUMBER: 'voip',
      UAN: 'unknown',
      PAGER: 'unknown',
      VOICEMAIL: 'unknown',
    })
    expect(lineTypeOf(null)).toBe('unknown')
    expect(lineTypeOf(undefined)).toBe('unknown')
  })
})
