import { createHmac } from 'node:crypto'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { signWebhook, verifyWebhook } from './signature.js'

const secret = 'whsec_test_6fQ2s1n5Qm9b3xYk'
const body = '{"id":"evt_1","type":"ping","created":1763769600,"api_version":"1","org_id":"org_1","data":{}}'
const t = 1_763_769_600
const nowAt = (s: number) => () => s * 1000

describe('signWebhook', () => {
  it('is t=<unix>,v1=<hex HMAC-SHA256 of "t.body" keyed with the whole whsec_ secret>', () => {
    const expected = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')
    expect(signWebhook(body, secret, t)).toBe(`t=${t},v1=${expected}`)
    expect(signWebhook(Buffer.from(body), secret, t)).toBe(`t=${t},v1=${expected}`)
  })
  it('matches the published Stripe-scheme vector (key is the prefixed secret, not base64-decoded)', () => {
    const withoutPrefix = createHmac('sha256', secret.slice(6)).update(`${t}.${body}`).digest('hex')
    expect(signWebhook(body, secret, t)).not.toContain(withoutPrefix)
  })
  it('rejects a missing secret or a bad timestamp', () => {
    expect(() => signWebhook(body, '', t)).toThrow(TypeError)
    expect(() => signWebhook(body, secret, -1)).toThrow(TypeError)
    expect(() => signWebhook(body, secret, 1.5)).toThrow(TypeError)
  })
})

describe('verifyWebhook', () => {
  const header = signWebhook(body, secret, t)
  it('accepts a fresh, matching signature', () => {
    expect(verifyWebhook(body, header, secret, { now: nowAt(t + 10) })).toEqual({ ok: true, timestamp: t })
  })
  it('takes several secrets (a receiver switching after a rotation): any one that signed passes; none, or a bad list, does not', () => {
    expect(verifyWebhook(body, header, ['whsec_new', secret], { now: nowAt(t) })).toEqual({ ok: true, timestamp: t })
    expect(verifyWebhook(body, header, [secret, 'whsec_new'], { now: nowAt(t) })).toEqual({ ok: true, timestamp: t })
    expect(verifyWebhook(body, header, ['whsec_new', 'whsec_older'], { now: nowAt(t) })).toEqual({ ok: false, error: 'signature_mismatch' })
    for (const bad of [[], [''], Array.from({ length: 11 }, (_, i) => `whsec_${i}`), '']) expect(() => verifyWebhook(body, header, bad, { now: nowAt(t) })).toThrow(TypeError)
  })
  it('rejects a tampered body, a wrong secret, a malformed header', () => {
    expect(verifyWebhook(body + ' ', header, secret, { now: nowAt(t) })).toEqual({ ok: false, error: 'signature_mismatch' })
    expect(verifyWebhook(body, header, 'whsec_other', { now: nowAt(t) })).toEqual({ ok: false, error: 'signature_mismatch' })
    expect(verifyWebhook(body, 'garbage', secret, { now: nowAt(t) })).toEqual({ ok: false, error: 'malformed_header' })
    expect(verifyWebhook(body, undefined, secret, { now: nowAt(t) })).toEqual({ ok: false, error: 'malformed_header' })
    expect(verifyWebhook(body, `t=${t}`, secret, { now: nowAt(t) })).toEqual({ ok: false, error: 'no_signature' })
    expect(verifyWebhook(body, `t=${t},t=${t},v1=00`, secret, { now: nowAt(t) })).toEqual({ ok: false, error: 'malformed_header' })
  })
  it('rejects timestamps older than 5 minutes and more than 5 minutes in the future, edges exact', () => {
    expect(verifyWebhook(body, header, secret, { now: nowAt(t + 300) }).ok).toBe(true)
    expect(verifyWebhook(body, header, secret, { now: nowAt(t + 301) })).toEqual({ ok: false, error: 'timestamp_too_old' })
    expect(verifyWebhook(body, header, secret, { now: nowAt(t - 300) }).ok).toBe(true)
    expect(verifyWebhook(body, header, secret, { now: nowAt(t - 301) })).toEqual({ ok: false, error: 'timestamp_in_future' })
    expect(verifyWebhook(body, header, secret, { now: nowAt(t + 1000), toleranceSeconds: 1000 }).ok).toBe(true)
  })
  it('accepts any of several v1 entries (secret rotation) and ignores other schemes', () => {
    const old = signWebhook(body, 'whsec_old', t).split(',')[1]
    const current = header.split(',')[1]
    expect(verifyWebhook(body, `t=${t},${old},${current}`, secret, { now: nowAt(t) }).ok).toBe(true)
    expect(verifyWebhook(body, `t=${t},v0=abc,${current}`, secret, { now: nowAt(t) }).ok).toBe(true)
    expect(verifyWebhook(body, `t=${t},${old}`, secret, { now: nowAt(t) }).ok).toBe(false)
  })
  it('round-trips any body and secret, and never throws on any header', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ minLength: 1 }), fc.integer({ min: 0, max: 999_999_999_999 }), (b, s, ts) => {
        const h = signWebhook(b, s, ts)
        return verifyWebhook(b, h, s, { now: nowAt(ts) }).ok
      }),
    )
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (h) => {
        const r = verifyWebhook(body, h, secret, { now: nowAt(t) })
        return r.ok === false
      }),
    )
  })
})
