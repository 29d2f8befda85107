import { createHmac } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { base32Decode, base32Encode, hotp, matchTotp, newRecoveryCodes, newTotpSecret, normalRecoveryCode, totpCode, totpQrSvg, totpStep, totpUri } from './totp.js'

/** RFC 6238 Appendix B, the SHA-1 rows: the seed is the ASCII "12345678901234567890". */
const RFC6238_SHA1: ReadonlyArray<[seconds: number, code: string]> = [
  [59, '94287082'],
  [1111111109, '07081804'],
  [1111111111, '14050471'],
  [1234567890, '89005924'],
  [2000000000, '69279037'],
  [20000000000, '65353130'],
]
const SEED_BYTES = Buffer.from('12345678901234567890', 'ascii')
const SEED = base32Encode(SEED_BYTES)

/** RFC 4226 Appendix D: HOTP of the same seed for counters 0–9. */
const RFC4226 = ['755224', '287082', '359152', '969429', '338314', '254676', '287922', '162583', '399871', '520489']

describe('TOTP (RFC 6238)', () => {
  it('base32 (RFC 4648) round-trips, and knows its test vectors', () => {
    expect(SEED).toBe('GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ')
    for (const [text, b32] of [['f', 'MY'], ['fo', 'MZXQ'], ['foo', 'MZXW6'], ['foob', 'MZXW6YQ'], ['fooba', 'MZXW6YTB'], ['foobar', 'MZXW6YTBOI']]) {
      expect(base32Encode(Buffer.from(text!))).toBe(b32)
      expect(base32Decode(`${b32!.toLowerCase()}===`).toString()).toBe(text)
    }
    expect(() => base32Decode('MZ1')).toThrow(TypeError)
    expect(base32Decode(newTotpSecret())).toHaveLength(20)
  })

  it('matches HOTP of RFC 4226 Appendix D', () => {
    RFC4226.forEach((code, counter) => expect(hotp(SEED_BYTES, counter)).toBe(code))
  })

  it('matches the test vectors of RFC 6238 Appendix B (8 digits), and our 6-digit codes are their last six', () => {
    for (const [seconds, code] of RFC6238_SHA1) {
      expect(hotp(SEED_BYTES, Math.floor(seconds / 30), 8)).toBe(code)
      // dynamic truncation mod 10^6 is the 8-digit value's last six digits
      expect(totpCode(SEED, seconds * 1000)).toBe(code.slice(2))
    }
  })

  it('agrees with a plain HMAC-SHA-1 computation (RFC 4226 §5.3) for a fresh secret', () => {
    const secret = newTotpSecret()
    expect(secret).toMatch(/^[A-Z2-7]{32}$/)
    const now = 1_790_000_000_000
    const counter = Buffer.alloc(8)
    counter.writeBigUInt64BE(BigInt(totpStep(now)))
    const mac = createHmac('sha1', base32Decode(secret)).update(counter).digest()
    const offset = mac[19]! & 0xf
    const value = (mac.readUInt32BE(offset) & 0x7fffffff) % 1_000_000
    expect(totpCode(secret, now)).toBe(String(value).padStart(6, '0'))
  })

  it('accepts the current step and one either side, nothing further, and says which step matched', () => {
    const t = 1111111111 * 1000
    const step = totpStep(t)
    expect(matchTotp(SEED, totpCode(SEED, t), t)).toBe(step)
    expect(matchTotp(SEED, totpCode(SEED, t - 30_000), t)).toBe(step - 1)
    expect(matchTotp(SEED, totpCode(SEED, t + 30_000), t)).toBe(step + 1)
    expect(matchTotp(SEED, totpCode(SEED, t - 60_000), t)).toBeNull()
    expect(matchTotp(SEED, totpCode(SEED, t + 60_000), t)).toBeNull()
    const spaced = totpCode(SEED, t).replace(/^(...)/, '$1 ')
    expect(matchTotp(SEED, spaced, t)).toBe(step)
    for (const bad of ['', '12345', '1234567', 'abcdef', '050471x']) expect(matchTotp(SEED, bad, t)).toBeNull()
  })

  it('builds the otpauth URI and a QR code without script or style', () => {
    const uri = totpUri(SEED, 'ada@example.test')
    expect(uri).toBe(`otpauth://totp/riskcheck:ada%40example.test?issuer=riskcheck&secret=${SEED}&algorithm=SHA1&digits=6&period=30`)
    const svg = totpQrSvg(uri)
    expect(svg).toMatch(/^<svg [^>]*viewBox=/)
    expect(svg).not.toMatch(/<script|style=|\son[a-z]+=/i)
  })

  it('makes ten distinct recovery codes and reads them back however they are typed', () => {
    const codes = newRecoveryCodes()
    expect(codes).toHaveLength(10)
    expect(new Set(codes).size).toBe(10)
    for (const c of codes) expect(c).toMatch(/^[a-z2-9]{4}(-[a-z2-9]{4}){3}$/)
    expect(normalRecoveryCode(` ${codes[0]!.toUpperCase()} `)).toBe(codes[0]!.replace(/-/g, ''))
  })
})
