/**
 * List values in their compared form, one rule per item type (docs/lists-and-velocity.md "Item types"): emails in
 * their canonical form (case, and dots/`+tags` where the provider ignores them), domains in lower-case ASCII, IP
 * addresses and networks as CIDR ranges, phone numbers in E.164, countries as ISO 3166 alpha-2, AS numbers as
 * integers. Never throws: a value that cannot be used gives the reason, said for people.
 */
import { asciiDomain, canonicalEmail } from '../checks/email/canonical.js'
import { formatIpv4, formatIpv6Words, parseCidr, type ParsedCidr } from '../sources/ip/parse.js'
import { getContinentCode } from '../sources/ip/geo-names.js'
import { getCountries, getCountryCallingCode, isSupportedCountry } from 'libphonenumber-js/max'
import { parseNumber } from '../sources/phone/number-type.js'
import type { ListItemType } from './types.js'

/** A value in its compared form: `key` for matching, `value` as reported (both strings except the IP network). */
export type Normalized =
  | { ok: true; key: string; value: string; cidr?: undefined }
  | { ok: true; key: string; value: string; cidr: ParsedCidr }
  | { ok: false; reason: string }

/** Longest value accepted, in characters (an email address is at most 320 after trimming). */
export const MAX_VALUE_LENGTH = 400

const fail = (reason: string): Normalized => ({ ok: false, reason })
const same = (key: string): Normalized => ({ ok: true, key, value: key })

/** The text of a CIDR range in its shortest form: an address for a single one, else `first/prefix`. */
export function cidrText(c: ParsedCidr): string {
  const single = c.version === 4 ? c.prefix === 32 : c.prefix === 128
  const first = c.version === 4 ? formatIpv4(c.first) : formatIpv6Words(c.first)
  return single ? first : `${first}/${c.prefix}`
}

// Assigned country calling codes: those of the numbering plans, plus the non-geographic ones (+800 freephone …).
let callingCodes: Set<string> | undefined
const callingCodeSet = () => (callingCodes ??= new Set([...getCountries().map((c) => getCountryCallingCode(c)), '800', '808', '870', '878', '881', '882', '883', '888', '979']))

/**
 * The E.164 form of a number written in international form (`+44 20 7946 0958`, `+1 (201) 555-0123`): `+` and the
 * digits, separators (spaces, `-`, `.`, `/`, parentheses) dropped; it must start with an assigned country calling
 * code and have 7 to 15 digits. No numbering-plan check (a number the plan rejects never matches, as lookups report
 * no E.164 form for it); a trunk prefix written as `(0)` is refused, since it is not part of the E.164 form, and
 * one written as a plain 0 after the calling code is dropped where the numbering plan says so.
 */
function e164Of(text: string): string | Normalized {
  const first = text.charCodeAt(0)
  if (first !== 0x2b /* + */ && first !== 0xff0b) return fail('not in international form (it must start with +)')
  if (text.includes('(0)')) return fail('has a trunk prefix (0): write the number without it')
  let digits = ''
  for (let i = 1; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c >= 48 && c <= 57) digits += text[i]
    else if (c !== 0x20 && c !== 0x2d && c !== 0x2e && c !== 0x2f && c !== 0x28 && c !== 0x29 && c !== 0xa0)
      return fail('not a phone number in international form (+ and digits; no extension)')
  }
  if (digits.length < 7 || digits.length > 15) return fail('not a phone number (7 to 15 digits after the +)')
  const codes = callingCodeSet()
  const cc = [1, 2, 3].find((n) => codes.has(digits.slice(0, n)))
  if (cc === undefined) return fail('not a phone number (no such country calling code)')
  // a 0 after the calling code: a trunk prefix where the plan drops it (+44 020 … is +44 20 …), a digit of the number
  // where it does not (+39 06 …); the lookups' parse tells which, so the item is the E.164 form they report
  if (digits.charCodeAt(cc) === 48) return parseNumber(`+${digits}`, {})?.number ?? `+${digits}`
  return `+${digits}`
}

/** The AS number of `AS64500`, `as64500` or `64500`, or null. */
function asnOf(raw: string | number): number | null {
  if (typeof raw === 'number') return Number.isSafeInteger(raw) && raw >= 0 && raw <= 0xffffffff ? raw : null
  let s = raw.trim()
  if (s.length > 2 && (s.charCodeAt(0) | 32) === 0x61 && (s.charCodeAt(1) | 32) === 0x73) s = s.slice(2)
  if (s.length === 0 || s.length > 10) return null
  let n = 0
  for (let i = 0; i < s.length; i++) {
    const d = s.charCodeAt(i) - 48
    if (d < 0 || d > 9) return null
    n = n * 10 + d
  }
  if (s.length > 1 && s.charCodeAt(0) === 48) return null
  return n <= 0xffffffff ? n : null
}

/**
 * The compared form of one list value of `type`, or why it cannot be used.
 *
 * @example
 * normalizeListValue('email', 'Jane.Doe+x@GMail.com') // { ok: true, key: 'janedoe@gmail.com', value: 'janedoe@gmail.com' }
 * normalizeListValue('ip', '203.0.113.9/24')         // { ok: true, key: '203.0.113.0/24', value: '203.0.113.0/24', cidr: … }
 * normalizeListValue('country', 'XX')                // { ok: false, reason: 'not an ISO 3166 alpha-2 country code' }
 */
export function normalizeListValue(type: ListItemType, raw: unknown): Normalized {
  if (typeof raw === 'number' && type === 'asn') {
    const n = asnOf(raw)
    return n === null ? fail('not an AS number (0 to 4294967295)') : same(`AS${n}`)
  }
  if (typeof raw !== 'string') return fail('must be a string')
  if (raw.length > MAX_VALUE_LENGTH) return fail(`longer than ${MAX_VALUE_LENGTH} characters`)
  const text = raw.trim()
  if (text === '') return fail('empty')
  switch (type) {
    case 'email': {
      const c = canonicalEmail(text)
      return c === null ? fail('not an email address') : same(c)
    }
    case 'email_domain': {
      const d = asciiDomain(text.charCodeAt(0) === 0x40 /* @ */ ? text.slice(1) : text)
      return d === null ? fail('not a domain name') : same(d)
    }
    case 'ip': {
      const c = parseCidr(text)
      if (c === null) return fail('not an IP address or CIDR network')
      const t = cidrText(c)
      return { ok: true, key: t, value: t, cidr: c }
    }
    case 'phone': {
      const e = e164Of(text)
      return typeof e === 'string' ? same(e) : e
    }
    case 'country': {
      const code = text.toUpperCase()
      const letters = code.length === 2 && code >= 'AA' && code <= 'ZZ' && code.charCodeAt(1) >= 65 && code.charCodeAt(1) <= 90
      // ISO 3166 codes, and the regions of the numbering plans (AC Ascension, TA Tristan da Cunha are phone regions)
      return letters && (getContinentCode(code) !== null || isSupportedCountry(code)) ? same(code) : fail('not an ISO 3166 alpha-2 country code')
    }
    case 'asn': {
      const n = asnOf(text)
      return n === null ? fail('not an AS number (AS64500 or 64500)') : same(`AS${n}`)
    }
    default:
      return fail('unknown item type')
  }
}
