/**
 * Two-factor sign-in codes: TOTP (RFC 6238: HMAC-SHA-1, 6 digits, 30-second steps, one step of clock drift either
 * way) through the `otpauth` package, the `otpauth://` URI and its QR code (SVG, by `uqr`) for authenticator apps,
 * and recovery codes. Which steps were used is the store's (`useTotpStep`); this module only computes.
 */
import { randomBytes } from 'node:crypto'
import { Secret, TOTP } from 'otpauth'
import { renderSVG } from 'uqr'

/** Seconds per TOTP step. */
export const TOTP_PERIOD = 30
/** Digits of a TOTP code. */
export const TOTP_DIGITS = 6
/** Steps of drift accepted either side of the current one. */
const WINDOW = 1
/** Recovery codes made at enrolment. */
export const RECOVERY_CODES = 10

const totp = (secret: string, label = '') =>
  new TOTP({ issuer: 'riskcheck', label, algorithm: 'SHA1', digits: TOTP_DIGITS, period: TOTP_PERIOD, secret: Secret.fromBase32(secret) })

/** A new random TOTP secret: 20 bytes (160 bits, RFC 4226's recommendation) as base32. */
export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32
}

/** The time step of `nowMs`. */
export const totpStep = (nowMs: number) => Math.floor(nowMs / 1000 / TOTP_PERIOD)

/** The code of `secret` at `nowMs`. */
export function totpCode(secret: string, nowMs: number): string {
  return totp(secret).generate({ timestamp: nowMs })
}

/**
 * The time step whose code `code` is (the current step or one either side), or null when it matches none. Spaces
 * are ignored; anything but six digits is null. Whether the step was used already is for the caller to ask.
 */
export function matchTotp(secret: string, code: string, nowMs: number): number | null {
  const digits = code.replace(/\s+/g, '')
  if (!/^[0-9]{6}$/.test(digits)) return null
  const delta = totp(secret).validate({ token: digits, timestamp: nowMs, window: WINDOW })
  return delta === null ? null : totpStep(nowMs) + delta
}

/** The `otpauth://totp/…` URI an authenticator app reads (the QR code holds it). */
export function totpUri(secret: string, account: string): string {
  return totp(secret, account).toString()
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
