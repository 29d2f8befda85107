/**
 * The longest input of each lookup, in characters: one table for the combined check's fields (and the route schema
 * built from them) and for bulk jobs, where a longer input is a free error row that is never looked up
 * (docs/decisions.md, "HTTP API" → "bulk input length"). The phone, IP and domain limits are their parsers' own.
 */
import type { BulkType } from '../schema.js'
import { MAX_IP_INPUT_LENGTH } from '../sources/ip/parse.js'
import { codePointLength, MAX_PHONE_LENGTH } from '../sources/phone/parse.js'
import { MAX_DOMAIN_INPUT_LENGTH } from './domain-input.js'

/**
 * The longest input of each lookup type that takes one string. Email: RFC 3696's 64-character local part, the @ and
 * a 255-character domain (the address syntax check then judges anything over 254 bytes `invalid`).
 */
export const INPUT_LIMITS: Readonly<Record<BulkType, number>> = {
  email: 320,
  phone: MAX_PHONE_LENGTH,
  phone_type: MAX_PHONE_LENGTH,
  ip: MAX_IP_INPUT_LENGTH,
  domain_age: MAX_DOMAIN_INPUT_LENGTH,
  email_auth: MAX_DOMAIN_INPUT_LENGTH,
}

/**
 * The length of `value` when it is longer than a `type` lookup takes, else null. Phone numbers count code points, as
 * the phone lookup does; the others UTF-16 code units, as their parsers do.
 */
export function overInputLimit(type: BulkType, value: string): number | null {
  if (value.length <= INPUT_LIMITS[type]) return null
  if (type !== 'phone' && type !== 'phone_type') return value.length
  const n = codePointLength(value, Number.MAX_SAFE_INTEGER)
  return n > INPUT_LIMITS[type] ? n : null
}
