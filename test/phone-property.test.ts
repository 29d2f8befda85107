/**
 * Property tests: any string (random Unicode, phone-like junk, over-long) and any country option either give a
 * schema-valid outcome or are rejected with INVALID_INPUT / MISSING_FIELD — never anything else.
 */
import fc from 'fast-check'
import { parsePhoneNumberFromString } from 'libphonenumber-js/max'
import { describe, expect, it } from 'vitest'
import { phoneCheck, type PhoneLookupOptions } from '../src/checks/phone.js'
import { phoneTypeCheck } from '../src/checks/phone-type.js'
import type { CheckDefinition } from '../src/checks/types.js'
import { RiskcheckError } from '../src/errors.js'
import { PhoneDataSchema, PhoneTypeDataSchema } from '../src/schema.js'
import { FACTORS } from '../src/scoring/factors.js'
import { analyzePhone } from '../src/sources/phone/parse.js'
import { phoneContext } from './phone-helpers.js'
import { schemaErrors } from './validate.js'

const ctx = phoneContext()

/** Phone-like strings: digits (ASCII and others), plus signs, separators, letters, extensions, emoji. */
const phoneish = fc
  .array(
    fc.oneof(
      fc.constantFrom('0', '1', '2', '3', '4', '5', '6', '7', '8', '9'),
      fc.constantFrom('+', '＋', ' ', '-', '.', '(', ')', '/', 'x', 'ext', ';ext=', '#', '*', 'tel:', '٣', '０', '😀', 'A', 'é', '\u200b', '\n'),
    ),
    { maxLength: 45 },
  )
  .map((parts) => parts.join(''))

const anyString = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 50 }), fc.string({ unit: 'binary', maxLength: 50 }), phoneish)
const country = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc.constantFrom('US', 'gb', 'FR', 'DE', 'IN', 'CN', 'BR', 'CA', 'XK', 'UK', 'ZZ', 'AQ', 'U', 'USA', ''),
  fc.string({ maxLength: 3 }),
)

function checkProperty<D>(def: CheckDefinition<any, PhoneLookupOptions, D>, schema: object) {
  return fc.asyncProperty(anyString, country, async (phone, c) => {
    const opts: PhoneLookupOptions = c === undefined ? {} : { country: c }
    let prepared
    try {
      prepared = def.prepare(phone, opts, ctx)
    } catch (e) {
      expect(e).toBeInstanceOf(RiskcheckError)
      expect(['INVALID_INPUT', 'MISSING_FIELD']).toContain((e as RiskcheckError).code)
      return
    }
    expect([...phone].length).toBeGreaterThanOrEqual(1)
    expect([...phone].length).toBeLessThanOrEqual(40)
    const outcome = await def.run(ctx, prepared.input, opts)
    expect(schemaErrors(schema, outcome.details)).toEqual([])
    for (const f of outcome.factors) expect(FACTORS[f].group).toBe('phone')
    const d = outcome.details as unknown as { valid: boolean; e164: string | null }
    if (d.valid) expect(d.e164).toMatch(/^\+[1-9][0-9]{1,14}$/)
    else {
      expect(d.e164).toBeNull()
      expect(outcome.factors).toEqual(['phone_invalid'])
    }
    expect(outcome.partial).toBe(false)
  })
}

describe('phone lookups on arbitrary input (property)', () => {
  it('phone: a schema-valid result or INVALID_INPUT', async () => {
    await fc.assert(checkProperty(phoneCheck, PhoneDataSchema), { numRuns: 400 })
  })

  it('phone/type: a schema-valid result or INVALID_INPUT', async () => {
    await fc.assert(checkProperty(phoneTypeCheck, PhoneTypeDataSchema), { numRuns: 400 })
  })

  it('reading validity from the type (one type match) agrees with libphonenumber-js isValid()', () => {
    const digits = fc.stringMatching(/^[0-9]{4,13}$/)
    const numbers = fc.oneof(
      phoneish,
      fc.tuple(fc.constantFrom('1', '7', '33', '44', '49', '52', '55', '61', '81', '86', '91', '234', '800', '882', '979'), digits).map(([cc, n]) => `+${cc}${n}`),
      // `tel:` URIs (RFC 3966) of national and international numbers, e.g. tel:400000000 (a valid AU mobile)
      fc.tuple(fc.constantFrom('tel:', 'TEL:', ' Tel: ', 'tel:+', 'tel:0'), digits).map(([scheme, n]) => `${scheme}${n}`),
    )
    fc.assert(
      fc.property(numbers, fc.constantFrom('US', 'GB', 'DE', 'IN', 'BR', 'CN', 'AU', 'JP', 'MX', 'NG'), (n, c) => {
        const ours = analyzePhone(n, c as 'US')
        // analyzePhone takes a leading `tel:` (documented there) and hands libphonenumber-js the rest; with
        // `extract: false` libphonenumber-js reads no URI scheme, so the oracle is given that same rest.
        const text = n.trim().replace(/^tel:/i, '').trim()
        const theirs = parsePhoneNumberFromString(text, { defaultCountry: c as 'US', extract: false })
        expect(ours.valid).toBe(theirs?.isValid() ?? false)
        if (ours.valid) expect(ours.planType).toBe(theirs!.getType())
      }),
      { numRuns: 3000 },
    )
  })

  it('the length limit is 40 characters exactly, whatever the characters', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme-composite', minLength: 1, maxLength: 60 }), (s) => {
        const n = [...s].length
        const ok = (() => {
          try {
            phoneCheck.prepare(s, {}, ctx)
            return true
          } catch (e) {
            expect((e as RiskcheckError).code).toBe('INVALID_INPUT')
            return false
          }
        })()
        expect(ok).toBe(n >= 1 && n <= 40)
      }),
      { numRuns: 300 },
    )
  })
})
