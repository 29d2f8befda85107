/**
 * Two-factor sign-in codes: TOTP (RFC 6238: HMAC-SHA-1, 6 digits, 30-second steps, one step of clock drift either
 * way) with `node:crypto`, the `otpauth://` URI and its QR code (SVG, by `uqr`) for authenticator apps, and recovery
 * codes. Which steps were used is the store's (`useTotpStep`); this module only computes.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { renderSVG } from 'uqr'

/** Seconds per TOTP step. */
export const TOTP_PERIOD = 30
/** Digits of a TOTP code. */
export const TOTP_DIGITS = 6
/** Steps of drift accepted either side of the current one. */
const WINDOW = 1
/** Recovery codes made at enrolment. */
export const RECOVERY_CODES = 10

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'

/** RFC 4648 base32 without padding. */
export function base32Encode(bytes: Uint8Array): string {
  let out = ''
  let bits = 0
  let value = 0
  for (const b of bytes) {
    value = (value << 8) | b
    bits += 8
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31]
      bits -= 5
    }
  }
  return bits > 0 ? out + BASE32[(value << (5 - bits)) & 31] : out
}

/** Decodes base32 (case and padding ignored); throws a TypeError on another character. */
export function base32Decode(s: string): Buffer {
  const out: number[] = []
  let bits = 0
  let value = 0
  let end = s.length
  while (end > 0 && s[end - 1] === '=') end-- // a loop, not /=+$/ (which backtracks on long runs of '=')
  for (const c of s.slice(0, end).toUpperCase()) {
    const i = BASE32.indexOf(c)
    if (i < 0) throw new TypeError('not base32')
    value = ((value << 5) | i) & 0xffff
    bits += 5
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255)
      bits -= 8
    }
  }
  return Buffer.from(out)
}

/** HOTP (RFC 4226 §5.3) of `counter`: HMAC-SHA-1, dynamic truncation, `digits` digits. */
export function hotp(key: Buffer, counter: number, digits = TOTP_DIGITS): string {
  const message = Buffer.alloc(8)
  message.writeBigUInt64BE(BigInt(counter))
  const mac = createHmac('sha1', key).update(message).digest()
  const offset = mac[mac.length - 1]! & 0xf
  return String((mac.readUInt32BE(offset) & 0x7fffffff) % 10 ** digits).padStart(digits, '0')
}

/** A new random TOTP secret: 20 bytes (160 bits, RFC 4226's recommendation) as base32. */
export function newTotpSecret(): string {
  return base32Encode(randomBytes(20))
}

/** The time step of `nowMs`. */
export const totpStep = (nowMs: number) => Math.floor(nowMs / 1000 / TOTP_PERIOD)

/** The code of `secret` at `nowMs`. */
export function totpCode(secret: string, nowMs: number): string {
  return hotp(base32Decode(secret), totpStep(nowMs))
}

/**
 * The time step whose code `code` is (the current step or one either side), or null when it matches none. Spaces
 * are ignored; anything but six digits is null. Whether the step was used already is for the caller to ask.
 */
export function matchTotp(secret: string, code: string, nowMs: number): number | null {
  const digits = code.replace(/\s+/g, '')
  if (!/^[0-9]{6}$/.test(digits)) return null
  const key = base32Decode(secret)
  const now = totpStep(nowMs)
  for (const step of [now, now - WINDOW, now + WINDOW]) {
    if (timingSafeEqual(Buffer.from(hotp(key, step)), Buffer.from(digits))) return step
  }
  return null
}

/** The `otpauth://totp/…` URI an authenticator app reads (the QR code holds it; Key URI Format of Google Authenticator). */
export function totpUri(secret: string, account: string): string {
  const issuer = 'riskcheck'
  const query = new URLSearchParams({ issuer, secret, algorithm: 'SHA1', digits: String(TOTP_DIGITS), period: String(TOTP_PERIOD) })
  return `otpauth://totp/${encodeURIComponent(issuer)}:${encodeURIComponent(account)}?${query.toString()}`
}

/** The URI as an SVG QR code (black modules on white; no script, no style attribute). */
export function totpQrSvg(uri: string): string {
  return renderSVG(uri, { ecc: 'M', border: 2, pixelSize: 4 })
}

const CODE_ALPHABET = 'abcdefghijkmnpqrstuvwxyz23456789'

/** Ten new recovery codes, `xxxx-xxxx-xxxx-xxxx` (80 random bits each, no 0/o/1/l to misread). */
export function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODES }, () => {
    const bytes = randomBytes(16)
    const chars = [...bytes].map((b) => CODE_ALPHABET[b % 32]!).join('')
    return chars.match(/.{4}/g)!.join('-')
  })
}

/** A recovery code as stored (its SHA-256 is): lower-case, without spaces and dashes. */
export function normalRecoveryCode(s: string): string {
  return s.toLowerCase().replace(/[\s-]+/g, '')
}
