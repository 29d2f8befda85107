/**
 * Phone number parsing and numbering-plan facts, over `libphonenumber-js/max` (the max metadata is what carries
 * the per-type patterns; with the default `min` metadata `getType()` is undefined for most countries). The type is
 * decided by ./number-type.ts, as `getType()` decides it, with the patterns compiled once.
 *
 * The number is parsed once and the one `PhoneNumber` object answers every field (validity, type, formats).
 * Nothing here does I/O.
 */
import {
  getCountryCallingCode,
  isSupportedCountry,
  type CountryCode,
  type PhoneNumber,
  type PhoneNumberType,
} from 'libphonenumber-js/max'
import { invalidInput, missingField } from '../../errors.js'
import { formatPhone } from './format.js'
import { numberTypeOf, parseNumber } from './number-type.js'
import type { LineType } from '../../schema.js'

/** Longest phone input accepted, in characters (Unicode code points), as documented (docs/api.md: 1 to 40 characters). */
export const MAX_PHONE_LENGTH = 40

/** The country used for numbers written without `+` when none is given (docs/lookups.md "Phone and phone line type": default US). */
export const DEFAULT_PHONE_COUNTRY: CountryCode = 'US'

/**
 * How libphonenumber's numbering-plan types map to the `line_type` vocabulary (docs/lookups.md "Phone and phone line
 * type"); the raw type is kept as `numbering_plan_type`. Why each type that is not obvious maps as it does:
 * docs/decisions.md, "Phone checks" → "line types".
 */
export const LINE_TYPE_BY_PLAN_TYPE: Readonly<Record<PhoneNumberType, LineType>> = Object.freeze({
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

/** The line type of a numbering-plan type (see {@link LINE_TYPE_BY_PLAN_TYPE}); `unknown` for none. */
export function lineTypeOf(planType: PhoneNumberType | null | undefined): LineType {
  return planType ? LINE_TYPE_BY_PLAN_TYPE[planType] : 'unknown'
}

/** Everything the numbering plan says about one input. */
export interface PhoneAnalysis {
  /** The input as looked up (trimmed; a leading `tel:` removed). */
  input: string
  /** The input was written in international form (starts with `+`); the `country` option did not apply. */
  international: boolean
  /** The country the number was read with when written without `+`. */
  defaultCountry: CountryCode
  /** The parsed number; undefined when libphonenumber found no number at all (letters, too short …). */
  number: PhoneNumber | undefined
  valid: boolean
  /** The length fits the numbering plan (a weaker test than `valid`). */
  possible: boolean
  /** E.164 form (`+442079460958`); null unless valid. */
  e164: string | null
  /** National form as dialled in the country (`020 7946 0958`); null unless valid (or not asked for). Includes an extension if given. */
  nationalFormat: string | null
  /** International form (`+44 20 7946 0958`); null unless valid (or not asked for). Includes an extension if given. */
  internationalFormat: string | null
  /** The country calling code as digits (`"44"`); null when none could be read. */
  callingCode: string | null
  /** National significant number (digits after the calling code); '' when none. */
  nationalNumber: string
  /** Extension digits when the input carried one (`x12`, `ext. 12`, `;ext=12`), else null. */
  extension: string | null
  /** ISO 3166 alpha-2 region of the number; null for non-geographic numbers (+800, +882 …) and unreadable ones. */
  region: CountryCode | null
  /** libphonenumber's type (`MOBILE`, `FIXED_LINE_OR_MOBILE`, …); null unless valid. */
  planType: PhoneNumberType | null
  /** The type in the documented vocabulary ({@link LINE_TYPE_BY_PLAN_TYPE}). */
  lineType: LineType
}

/**
 * Checks the `phone` field of a lookup: a string of 1 to {@link MAX_PHONE_LENGTH} characters. Returns it unchanged.
 * Throws MISSING_FIELD for null/undefined and INVALID_INPUT for a non-string, an empty string or a longer one.
 * Any other string — letters, emoji, half a number — is a lookup whose answer is `valid: false`.
 */
export function validatePhoneInput(phone: unknown): string {
  if (phone === undefined || phone === null) throw missingField('phone is required', 'phone')
  if (typeof phone !== 'string') throw invalidInput('phone must be a string', 'phone')
  if (phone.length === 0) throw invalidInput('phone must be 1 to 40 characters (got an empty string)', 'phone')
  if (phone.length > MAX_PHONE_LENGTH && codePointLength(phone, MAX_PHONE_LENGTH + 1) > MAX_PHONE_LENGTH)
    throw invalidInput(`phone must be at most ${MAX_PHONE_LENGTH} characters`, 'phone')
  return phone
}

/** Code points in `s`, counting no further than `cap`. */
export function codePointLength(s: string, cap: number): number {
  let n = 0
  for (let i = 0; i < s.length && n < cap; i++, n++) {
    const c = s.charCodeAt(i)
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1)
      if (d >= 0xdc00 && d <= 0xdfff) i++
    }
  }
  return n
}

/**
 * Checks the `country` option: an ISO 3166 alpha-2 code that libphonenumber has a numbering plan for
 * (case-insensitive, so `gb` is `GB`). null/undefined give the default (US). Anything else throws INVALID_INPUT —
 * including `UK` (the ISO code is `GB`) and real ISO codes without a numbering plan of their own (`AQ`).
 *
 * @example
 * normalizePhoneCountry('gb')      // 'GB'
 * normalizePhoneCountry(undefined) // 'US'
 * normalizePhoneCountry('UK')      // throws RiskcheckError INVALID_INPUT ("… did you mean GB?")
 */
export function normalizePhoneCountry(country: unknown): CountryCode {
  if (country === undefined || country === null) return DEFAULT_PHONE_COUNTRY
  if (typeof country !== 'string' || country.length !== 2)
    throw invalidInput('country must be an ISO 3166 alpha-2 code (2 letters)', 'country')
  const upper = country.toUpperCase()
  if (isSupportedCountry(upper)) return upper
  const hint = upper === 'UK' ? ' (did you mean GB?)' : ''
  throw invalidInput(`country ${JSON.stringify(country)} is not an ISO 3166 alpha-2 code with a known numbering plan${hint}`, 'country')
}

/** True when `region` is a region libphonenumber knows (a type guard for its `CountryCode`). */
export function isPhoneRegion(region: string): region is CountryCode {
  return region.length === 2 && isSupportedCountry(region)
}

/** The calling code (digits) of a region, e.g. `'44'` for GB. */
export function callingCodeOf(region: CountryCode): string {
  return getCountryCallingCode(region)
}

let regionNames: Intl.DisplayNames | undefined
const regionNameCache = new Map<string, string>()

/**
 * English name of an ISO 3166 alpha-2 region (`GB` → `United Kingdom`), from `Intl.DisplayNames`; '' for an empty
 * code. Cached per code.
 */
export function regionName(region: string): string {
  if (region === '') return ''
  let name = regionNameCache.get(region)
  if (name === undefined) {
    regionNames ??= new Intl.DisplayNames('en', { type: 'region', fallback: 'code' })
    try {
      name = regionNames.of(region) ?? region
    } catch {
      name = region
    }
    regionNameCache.set(region, name)
  }
  return name
}

/** Options of {@link analyzePhone}. */
export interface AnalyzePhoneOptions {
  /** Compute `nationalFormat` / `internationalFormat` (default true); the line-type lookup needs neither. */
  formats?: boolean
}

/**
 * Parses `input` (already checked by {@link validatePhoneInput}) and reads the numbering-plan facts. The whole input
 * must be the number; separators, an extension, `tel:` and Unicode decimal digits are accepted. Never throws: an
 * unreadable number gives `valid: false` with null formats (docs/decisions.md, "Phone checks" → "one parse, one type
 * match").
 *
 * @example
 * analyzePhone('020 7946 0958', 'GB') // { e164: '+442079460958', valid: true, planType: 'FIXED_LINE', lineType: 'landline', … }
 */
export function analyzePhone(
  input: string,
  defaultCountry: CountryCode = DEFAULT_PHONE_COUNTRY,
  options: AnalyzePhoneOptions = {},
): PhoneAnalysis {
  let text = input.trim()
  if (text.length >= 4 && (text.charCodeAt(0) | 32) === 116 && text.slice(0, 4).toLowerCase() === 'tel:') text = text.slice(4).trim()
  const first = text.charCodeAt(0)
  const international = first === 43 /* + */ || first === 0xff0b /* ＋ */
  let number: PhoneNumber | undefined
  try {
    number = parseNumber(text, { defaultCountry, extract: false })
  } catch {
    number = undefined
  }
  if (number === undefined) {
    return {
      input: text,
      international,
      defaultCountry,
      number,
      valid: false,
      possible: false,
      e164: null,
      nationalFormat: null,
      internationalFormat: null,
      callingCode: null,
      nationalNumber: '',
      extension: null,
      region: null,
      planType: null,
      lineType: 'unknown',
    }
  }
  const planType = numberTypeOf(number) ?? null
  const valid = planType !== null
  const formats = valid && options.formats !== false ? formatPhone(number) : null
  return {
    input: text,
    international,
    defaultCountry,
    number,
    valid,
    possible: valid || number.isPossible(),
    e164: valid ? number.number : null,
    nationalFormat: formats ? formats.national : null,
    internationalFormat: formats ? formats.international : null,
    callingCode: number.countryCallingCode,
    nationalNumber: number.nationalNumber,
    extension: number.ext ?? null,
    region: number.country ?? null,
    planType,
    lineType: lineTypeOf(planType),
  }
}
