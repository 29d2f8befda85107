import { describe, expect, it } from 'vitest'
import { canonicalEmail, asciiDomain } from '../checks/email/canonical.js'
import { normalizeListValue } from './normalize.js'
import type { ListItemType } from './types.js'

const key = (type: ListItemType, v: unknown) => {
  const n = normalizeListValue(type, v)
  return n.ok ? n.key : `! ${n.reason}`
}

describe('canonical email', () => {
  it('folds case everywhere, and dots and +tags only where the provider ignores them', () => {
    expect(canonicalEmail('Jane.Doe+news@GMail.com')).toBe('janedoe@gmail.com')
    expect(canonicalEmail('j.a.n.e.doe@googlemail.com')).toBe('janedoe@gmail.com')
    expect(canonicalEmail('Jane.Doe+shop@outlook.com')).toBe('jane.doe@outlook.com')
    expect(canonicalEmail('jane+x@icloud.com')).toBe('jane@icloud.com')
    expect(canonicalEmail('Jane.Doe+news@Acme.io')).toBe('jane.doe+news@acme.io')
    expect(canonicalEmail('jane.doe@yahoo.com')).toBe('jane.doe@yahoo.com')
    expect(canonicalEmail('+tag@gmail.com')).toBe('+tag@gmail.com') // a local part that is only a tag stays
    expect(canonicalEmail('jörg@Bücher.de')).toBe('jörg@xn--bcher-kva.de')
    expect(canonicalEmail('not an address')).toBeNull()
    expect(canonicalEmail(42)).toBeNull()
  })

  it('asciiDomain: lower-case ASCII host names, or null', () => {
    expect(asciiDomain('Bücher.DE.')).toBe('xn--bcher-kva.de')
    expect(asciiDomain('  Example.COM ')).toBe('example.com')
    expect(asciiDomain('com')).toBe('com')
    for (const bad of ['', '.', 'a..b', '-a.com', 'a-.com', 'a b.com', 'x'.repeat(64) + '.com', 'exa_mple.com', '*.example.com'])
      expect(asciiDomain(bad), bad).toBeNull()
  })
})

describe('normalizeListValue', () => {
  it('email: the canonical form', () => {
    expect(key('email', ' Jane.Doe+x@GMail.com ')).toBe('janedoe@gmail.com')
    expect(key('email', 'nope')).toBe('! not an email address')
  })

  it('email_domain: lower-case ASCII, a leading @ allowed', () => {
    expect(key('email_domain', '@Mailinator.COM')).toBe('mailinator.com')
    expect(key('email_domain', 'bücher.de')).toBe('xn--bcher-kva.de')
    expect(key('email_domain', 'not a domain')).toBe('! not a domain name')
  })

  it('ip: an address or a CIDR network, host bits cleared, shortest text', () => {
    expect(key('ip', '203.0.113.9/24')).toBe('203.0.113.0/24')
    expect(key('ip', '203.0.113.9')).toBe('203.0.113.9')
    expect(key('ip', '203.0.113.9/32')).toBe('203.0.113.9')
    expect(key('ip', '2001:DB8::1/32')).toBe('2001:db8::/32')
    expect(key('ip', '::ffff:192.0.2.1')).toBe('192.0.2.1')
    expect(key('ip', '0.0.0.0/0')).toBe('0.0.0.0/0')
    expect(key('ip', '10.0.0.0/33')).toBe('! not an IP address or CIDR network')
    expect(key('ip', '010.0.0.1')).toBe('! not an IP address or CIDR network')
  })

  it('phone: E.164 of a number in international form', () => {
    expect(key('phone', '+44 20 7946 0958')).toBe('+442079460958')
    expect(key('phone', '+1 (201) 555-0123')).toBe('+12015550123')
    expect(key('phone', '+39 06 1234 5678')).toBe('+390612345678')
    // a trunk 0 after the calling code: dropped where the plan drops it (as the phone lookup's E.164 form), kept in Italy
    expect(key('phone', '+44 020 7946 0958')).toBe('+442079460958')
    expect(key('phone', '+49 030 123456')).toBe('+4930123456')
    expect(key('phone', '+39 06 1234 5678')).toBe('+390612345678')
    expect(key('phone', '+800 1234 5678')).toBe('+80012345678')
    expect(key('phone', '020 7946 0958')).toBe('! not in international form (it must start with +)')
    expect(key('phone', '+44 (0)20 7946 0958')).toBe('! has a trunk prefix (0): write the number without it')
    expect(key('phone', '+1 123')).toBe('! not a phone number (7 to 15 digits after the +)')
    expect(key('phone', '+999 1234 5678')).toBe('! not a phone number (no such country calling code)')
    expect(key('phone', '+44 20 7946 0958 ext. 12')).toBe('! not a phone number in international form (+ and digits; no extension)')
  })

  it('phone: the E.164 form the phone lookup reports for the same number', async () => {
    const { analyzePhone } = await import('../sources/phone/parse.js')
    for (const n of ['+44 20 7946 0958', '+1 201-555-0123', '+39 06 1234 5678', '+61 4 1234 5678', '+49 30 123456', '+81 3-1234-5678'])
      expect(key('phone', n), n).toBe(analyzePhone(n).e164)
  })

  it('country: ISO 3166 alpha-2, any case', () => {
    expect(key('country', 'kp')).toBe('KP')
    expect(key('country', 'XX')).toBe('! not an ISO 3166 alpha-2 country code')
    expect(key('country', 'USA')).toBe('! not an ISO 3166 alpha-2 country code')
  })

  it('asn: AS64500, as64500, 64500 or a number', () => {
    expect(key('asn', 'AS64500')).toBe('AS64500')
    expect(key('asn', 'as64500')).toBe('AS64500')
    expect(key('asn', '64500')).toBe('AS64500')
    expect(key('asn', 64500)).toBe('AS64500')
    expect(key('asn', 4294967295)).toBe('AS4294967295')
    expect(key('asn', 4294967296)).toMatch(/^! not an AS number/)
    expect(key('asn', '064500')).toMatch(/^! not an AS number/)
    expect(key('asn', 'AS')).toMatch(/^! not an AS number/)
  })

  it('anything else: a reason, never a throw', () => {
    expect(key('email', null)).toBe('! must be a string')
    expect(key('ip', 42)).toBe('! must be a string')
    expect(key('country', '   ')).toBe('! empty')
    expect(key('email', 'a'.repeat(401))).toBe('! longer than 400 characters')
    expect(key('nonsense' as ListItemType, 'x')).toBe('! unknown item type')
  })
})
