import { describe, expect, it } from 'vitest'
import { bearerToken, generateApiKey, hashApiKey, parseApiKey, parseScopes, randomBase62, verifyApiKey } from './keys.js'

describe('API keys', () => {
  it('generates svc_live_/svc_test_ keys whose id part finds the record', () => {
    const live = generateApiKey('live')
    expect(live.secret).toMatch(/^svc_live_[0-9A-Za-z]{52}$/)
    expect(parseApiKey(live.secret)).toEqual({ mode: 'live', id: live.id })
    const test = generateApiKey('test')
    expect(parseApiKey(test.secret)).toEqual({ mode: 'test', id: test.id })
    expect(test.id).toMatch(/^key_[0-9A-Za-z]{12}$/)
    expect(generateApiKey('live').secret).not.toBe(live.secret)
  })

  it('refuses strings that cannot be a key before any hashing', () => {
    const { secret } = generateApiKey('live')
    for (const bad of ['', 'svc_live_', secret.slice(0, -1), `${secret}x`, secret.replace('svc_live_', 'svc_prod_'), secret.replace(/.$/, '-'), `sk_live_${secret.slice(9)}`]) {
      expect(parseApiKey(bad), bad).toBeUndefined()
    }
  })

  it('stores only a keyed hash, compared in constant time', () => {
    const { secret } = generateApiKey('test')
    const h = hashApiKey(secret, 'pepper')
    expect(h).toMatch(/^[0-9a-f]{64}$/)
    expect(h).not.toContain(secret.slice(9))
    expect(verifyApiKey(secret, h, 'pepper')).toBe(true)
    expect(verifyApiKey(secret, h, 'other pepper')).toBe(false)
    expect(verifyApiKey(generateApiKey('test').secret, h, 'pepper')).toBe(false)
    expect(verifyApiKey(secret, 'abcd', 'pepper')).toBe(false)
  })

  it('reads the bearer token of an Authorization header', () => {
    expect(bearerToken('Bearer abc')).toBe('abc')
    expect(bearerToken('bearer  abc ')).toBe('abc')
    expect(bearerToken('Basic abc')).toBeUndefined()
    expect(bearerToken('Bearer')).toBeUndefined()
    expect(bearerToken('Bearer ')).toBeUndefined()
    expect(bearerToken(undefined)).toBeUndefined()
    expect(bearerToken(`Bearer ${'a'.repeat(500)}`)).toBeUndefined()
  })

  it('parses scope lists and rejects unknown scopes', () => {
    expect(parseScopes('lookup, account:read,lookup')).toEqual(['lookup', 'account:read'])
    expect(parseScopes('webhooks,bulk')).toEqual(['webhooks', 'bulk'])
    expect(() => parseScopes('lookup,admin')).toThrow(/unknown scope "admin"/)
  })

  it('random base62 text has the asked length and alphabet', () => {
    const t = randomBase62(500)
    expect(t).toMatch(/^[0-9A-Za-z]{500}$/)
    expect(new Set(t).size).toBeGreaterThan(50)
  })
})
